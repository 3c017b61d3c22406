"""The study spec: strict, versioned TOML loaded into pydantic models.

Unknown keys, bad units and impossible values are rejected with a
:class:`SpecError` whose lines each name the key path (``path.rate``,
``flows.1.streams``, ``sweep."flows.0.cc"``) and what is allowed.
"""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .backends import DEFAULT_BACKEND, backend_names
from .units import UnitError, parse_per_second, parse_rate_bps, parse_size_bytes, parse_time_s
from .wire import TCP_IP_HEADER_BYTES, TIMESTAMP_OPTION_BYTES

SPEC_VERSION = 1
TCP_MIN_MSS = 88  # include/net/tcp.h
# Linux defaults of net.ipv4.tcp_rmem[2] / tcp_wmem[2].
LINUX_RMEM_MAX_BYTES = 6291456
LINUX_WMEM_MAX_BYTES = 4194304


class SpecError(ValueError):
    """The spec is invalid. ``problems`` lists (key path, message) pairs."""

    def __init__(self, problems: list[tuple[str, str]], source: str = "") -> None:
        self.problems = problems
        head = f"invalid study spec{f' {source}' if source else ''}:"
        super().__init__("\n".join([head] + [f"  {k}: {m}" for k, m in problems]))


def _unit(parser):
    def convert(value: Any) -> Any:
        try:
            return parser(value)
        except UnitError as e:
            raise ValueError(str(e)) from None
    return BeforeValidator(convert)


RateBps = Annotated[float, _unit(parse_rate_bps), Field(gt=0)]
TimeS = Annotated[float, _unit(parse_time_s), Field(ge=0)]
SizeBytes = Annotated[int, _unit(parse_size_bytes), Field(gt=0)]
PerSecond = Annotated[float, _unit(parse_per_second), Field(gt=0)]
Probability = Annotated[float, Field(ge=0, lt=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StudySection(_Strict):
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)]
    description: str = ""
    backends: list[str] = Field(default_factory=lambda: [DEFAULT_BACKEND], min_length=1)
    duration: Annotated[TimeS, Field(gt=0)]
    warmup: TimeS = 0.0
    repetitions: Annotated[int, Field(ge=1, le=10000)] = 1
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 1
    interval: Annotated[TimeS, Field(gt=0)] = 0.1  # sampling interval of the series

    @field_validator("backends")
    @classmethod
    def _registered_backends(cls, names: list[str]) -> list[str]:
        known = backend_names()
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"got {', '.join(map(repr, unknown))}; the backends are {', '.join(known)}")
        return names

    @model_validator(mode="after")
    def _warmup_shorter_than_duration(self) -> StudySection:
        if self.warmup >= self.duration:
            raise ValueError(
                f"warmup ({self.warmup:g} s) must be shorter than duration ({self.duration:g} s)"
            )
        return self


class Buffer(_Strict):
    """Bottleneck buffer as written: bytes, packets or a multiple of the BDP."""

    amount: float
    unit: Literal["bytes", "packets", "bdp"]

    def to_bytes(self, rate_bps: float, rtt_s: float, mtu_bytes: int) -> int:
        if self.unit == "bdp":
            return max(mtu_bytes, int(self.amount * rate_bps * rtt_s / 8))
        if self.unit == "packets":
            return int(self.amount * mtu_bytes)
        return int(self.amount)


def _parse_buffer(value: Any) -> Any:
    if isinstance(value, Buffer) or isinstance(value, dict):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {"amount": value, "unit": "bytes"}
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(bdp|pkts?|packets?)\s*", value, re.I)
        if m:
            unit = "bdp" if m.group(2).lower() == "bdp" else "packets"
            return {"amount": float(m.group(1)), "unit": unit}
        try:
            return {"amount": parse_size_bytes(value), "unit": "bytes"}
        except UnitError:
            pass
    raise ValueError(
        f"cannot read {value!r} as a buffer; write bytes ('1.5MB'), packets ('1000pkts') "
        "or a multiple of the bandwidth-delay product ('1bdp', '0.5bdp')"
    )


class PathSection(_Strict):
    rate: RateBps
    rtt: Annotated[TimeS, Field(gt=0, le=10)]
    loss: Probability = 0.0  # random loss per packet
    corruption: Annotated[float, Field(ge=0, le=1e-3)] = 0.0  # per bit
    buffer: Annotated[Buffer, BeforeValidator(_parse_buffer)] = Buffer(amount=1, unit="bdp")
    mtu: Annotated[int, Field(ge=576, le=65535)] = 1500

    @model_validator(mode="after")
    def _buffer_positive(self) -> PathSection:
        if self.buffer.amount <= 0:
            raise ValueError("buffer must be positive")
        return self


class HostSection(_Strict):
    rmem_max: SizeBytes | None = None  # net.ipv4.tcp_rmem[2]
    wmem_max: SizeBytes | None = None  # net.ipv4.tcp_wmem[2]
    stream_rate_cap: RateBps | None = None  # per-stream send cap (CPU-bound host)
    extra_rtt: TimeS = 0.0  # added delay on this host's access link, round trip


class FlowSection(_Strict):
    kind: Literal["bulk", "rpc"] = "bulk"
    cc: Annotated[str, Field(pattern=r"^[a-z0-9_]+$")]
    streams: Annotated[int, Field(ge=1, le=1000)] = 1
    mss: Annotated[int, Field(ge=TCP_MIN_MSS, le=65495)] | None = None  # TCP_MAXSEG
    sender: Annotated[str, Field(pattern=r"^[A-Za-z0-9_]{1,8}$")] = "s1"
    start: TimeS = 0.0
    request: SizeBytes | None = None
    response: SizeBytes | None = None
    concurrency: Annotated[int, Field(ge=1, le=10000)] | None = None
    rate: PerSecond | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> FlowSection:
        rpc_keys = ("request", "response", "concurrency", "rate")
        if self.kind == "bulk":
            given = [k for k in rpc_keys if getattr(self, k) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} only apply to kind = \"rpc\"")
        else:
            if self.request is None or self.response is None:
                raise ValueError('kind = "rpc" needs both request and response sizes')
            if (self.concurrency is None) == (self.rate is None):
                raise ValueError(
                    'kind = "rpc" needs exactly one of concurrency (closed loop) '
                    "or rate (open loop, e.g. '200/s')"
                )
        return self


class Spec(_Strict):
    version: Literal[1]
    study: StudySection
    path: PathSection
    hosts: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9_]{1,8}$")], HostSection] = {}
    flows: list[FlowSection] = Field(min_length=1, max_length=64)
    sweep: dict[str, Annotated[list[Any], Field(min_length=1)]] = {}

    @model_validator(mode="after")
    def _cross_checks(self) -> Spec:
        senders = {f.sender for f in self.flows}
        for name in self.hosts:
            if name not in senders and name not in ("default", "receiver"):
                raise ValueError(
                    f"hosts.{name} names no sender; senders are {sorted(senders)}, "
                    "plus 'default' (every host) and 'receiver'"
                )
        for i, flow in enumerate(self.flows):
            if flow.mss is not None and flow.mss > self.path.mtu - TCP_IP_HEADER_BYTES:
                raise ValueError(
                    f"flows.{i}.mss = {flow.mss} does not fit path.mtu = {self.path.mtu} "
                    f"(at most mtu - {TCP_IP_HEADER_BYTES} = {self.path.mtu - TCP_IP_HEADER_BYTES})"
                )
            if flow.start >= self.study.duration:
                raise ValueError(f"flows.{i}.start must be before study.duration")
        return self

    # ---- derived values --------------------------------------------------

    def host(self, name: str) -> HostSection:
        """Limits of host `name`: its own section over `hosts.default`."""
        merged = dict(self.hosts.get("default", HostSection()).model_dump(exclude_unset=True))
        merged.update(self.hosts.get(name, HostSection()).model_dump(exclude_unset=True))
        return HostSection(**merged)

    def mss_payload_bytes(self, flow: FlowSection) -> int:
        """Payload per segment as Linux computes it (tcp_mtu_to_mss): the MSS
        (TCP_MAXSEG, default mtu - 40) less the 12-byte timestamp option."""
        mss = flow.mss if flow.mss is not None else self.path.mtu - TCP_IP_HEADER_BYTES
        return mss - TIMESTAMP_OPTION_BYTES

    def buffer_bytes(self) -> int:
        return self.path.buffer.to_bytes(self.path.rate, self.path.rtt, self.path.mtu)


def _loc(loc: tuple) -> str:
    return ".".join(str(p) for p in loc if not str(p).startswith("function-"))


def _problems(err: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    out = []
    for e in err.errors():
        loc = tuple(p for p in e["loc"] if not isinstance(p, str) or "[" not in p)
        path = _loc(loc)
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "literal_error":
            msg = f"got {e.get('input')!r}; {msg.lower()}"
        out.append((prefix + path if path else (prefix.rstrip(".") or "spec"), msg))
    return out


def validate(raw: dict[str, Any], source: str = "") -> Spec:
    """Validate a raw spec mapping (no sweep applied yet) and its sweep."""
    try:
        spec = Spec.model_validate(raw)
    except ValidationError as e:
        raise SpecError(_problems(e), source) from None
    problems = []
    for key, values in spec.sweep.items():
        problems += _check_sweep_key(raw, key, values)
    if problems:
        raise SpecError(problems, source)
    return spec


def _check_sweep_key(raw: dict, key: str, values: list) -> list[tuple[str, str]]:
    where = f'sweep."{key}"'
    parts = key.split(".")
    if parts[0] not in ("study", "path", "hosts", "flows"):
        return [(where, "sweep keys start with study., path., hosts. or flows.")]
    if parts[0] == "study" and parts[-1] in ("name", "backends", "repetitions", "seed"):
        return [(where, f"study.{parts[-1]} cannot be swept")]
    problems = []
    for i, value in enumerate(values):
        try:
            candidate = apply_overrides(raw, {key: value})
            Spec.model_validate({**candidate, "sweep": {}})
        except KeyError as e:
            return [(where, str(e.args[0]))]
        except ValidationError as e:
            for path, msg in _problems(e):
                problems.append((f"{where}[{i}] ({path})", msg))
    return problems


def apply_overrides(raw: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Copy `raw` with dotted keys set (``flows.0.cc`` = 'bbr'). The key must
    name an existing section; a leaf may be new only where the model has it."""
    out = copy.deepcopy(raw)
    out.pop("sweep", None)
    for key, value in overrides.items():
        node: Any = out
        parts = key.split(".")
        for depth, part in enumerate(parts[:-1]):
            prefix = ".".join(parts[: depth + 1])
            if isinstance(node, list):
                if not part.isdigit() or int(part) >= len(node):
                    raise KeyError(f"{prefix}: no such flow (there are {len(node)})")
                node = node[int(part)]
            elif isinstance(node, dict):
                if part not in node:
                    if parts[0] == "hosts" and depth == 1:
                        node[part] = {}
                    else:
                        raise KeyError(f"{prefix}: no such section in the spec")
                node = node[part]
            else:
                raise KeyError(f"{prefix}: is a value, not a section")
        if not isinstance(node, dict):
            raise KeyError(f"{key}: does not name a key of a section")
        node[parts[-1]] = value
    return out


def load_raw(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise SpecError([("file", f"cannot read {p}: {e.strerror}")]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError([("toml", str(e))], str(p)) from None


def load(path: str | Path) -> tuple[Spec, dict[str, Any]]:
    """Load and validate a study file; returns the spec and its raw mapping."""
    raw = load_raw(path)
    if raw.get("version") not in (None, SPEC_VERSION) and isinstance(raw.get("version"), int):
        raise SpecError(
            [("version", f"spec version {raw['version']} is not supported; this fatpipe reads {SPEC_VERSION}")],
            str(path),
        )
    return validate(raw, str(path)), raw
