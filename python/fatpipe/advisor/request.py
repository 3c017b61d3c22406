"""What `fatpipe advise` is asked: the user's path and the choices the user
can make, from command-line flags or a small TOML file with the same keys::

    rate = "10Gbit"        # bottleneck rate
    rtt = "70ms"           # base round trip
    loss = 1e-4            # random loss per packet
    mtu = [1500, 9000]     # MTUs the path allows (default [1500])
    buffer = "1bdp"        # bottleneck buffer (bytes, packets or BDPs)
    rmem = "6MiB"          # the hosts' tcp_rmem[2] now (default Linux's)
    wmem = "4MiB"          # the hosts' tcp_wmem[2] now (default Linux's)
    stream_cap = "5Gbit"   # what one stream can send (CPU-bound host)
    ccas = ["cubic", "bbr"]  # CCAs the user can deploy (default: AdviseRequest.ccas)
    max_streams = 16       # most parallel streams the transfer tool opens
    competing = "cubic"    # traffic sharing the path (one stream of this CCA)
    budget = "60s"         # wall time to aim for
    host_profile = "NAME"  # the hosts' profile (data/host_profiles.toml)
    [host]                 # host-model keys over the profile's (HOST_KEYS)
    cpu_cores = 4
    cost_receive_byte = "0.3ns"

Validated as strictly as a study (the spec's unit types; unknown keys and
bad values are errors naming the key and what is allowed).

The host model (host_profile, host) describes the sender and the receiver
alike (docs/advise.md, "Hosts"); without one the hosts are taken as
infinitely fast, and the advice says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError, field_validator

from .. import ccas as cca_registry
from .. import hostcpu, hostprofiles
from .. import spec as spec_mod
from ..buffer import Buffer, parse_buffer
from ..spec import DurationS, Probability, RateBps, RttS, SizeBytes, SpecError
from ..spec_errors import validation_problems

DEFAULT_MAX_STREAMS = 16
MAX_MAX_STREAMS = 256
DEFAULT_BUDGET_S = 60.0
MTU_RANGE = (576, 65535)
# The [hosts] keys a request's [host] table may set: the host model's CPU,
# NIC and receive offload (docs/host-model.md, "Keys"). The buffers are
# the request's rmem/wmem, a stream's cap its stream_cap.
HOST_KEYS = ("cpu_cores", "app_threads", "rx_ring", "nic_rate", "gro", *hostcpu.COST_FIELDS)


def _host_keys(value: Any) -> Any:
    """A [host] table of HOST_KEYS, validated as a study's [hosts.<name>]
    keys: {key: value in SI units}."""
    if not isinstance(value, dict):
        raise ValueError(f"host is a table of host-model keys ({', '.join(HOST_KEYS)})")
    other = [k for k in value if k not in HOST_KEYS]
    if other:
        raise ValueError(f"got {', '.join(map(repr, other))}; host takes the host-model keys "
                         f"{', '.join(HOST_KEYS)} (the buffers are rmem and wmem, a stream's cap stream_cap)")
    try:
        section = spec_mod.HostSection.model_validate(value)
    except ValidationError as e:
        raise ValueError("; ".join(f"{k}: {m}" for k, m in validation_problems(e))) from None
    return {k: getattr(section, k) for k in section.model_fields_set}


def _profile_name(value: Any) -> Any:
    if value not in hostprofiles.PROFILES:
        raise ValueError(f"got {value!r}; host profiles: {', '.join(hostprofiles.PROFILES)} "
                         "(python/fatpipe/data/host_profiles.toml)")
    return value


def _split_list(value: Any) -> Any:
    """"1500,9000" (a flag) or [1500, 9000] (TOML) or one value."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return value if isinstance(value, list) else [value]


def _mtus(value: Any) -> Any:
    out = []
    for v in _split_list(value):
        try:
            mtu = int(v) if isinstance(v, str) else v
        except ValueError:
            raise ValueError(f"got {v!r}; an MTU is a whole number of bytes such as 1500 or 9000") from None
        if isinstance(mtu, bool) or not isinstance(mtu, int) or not MTU_RANGE[0] <= mtu <= MTU_RANGE[1]:
            raise ValueError(f"got {v!r}; an MTU is a whole number of bytes from {MTU_RANGE[0]} to {MTU_RANGE[1]}")
        out.append(mtu)
    if not out:
        raise ValueError("give at least one MTU, e.g. 1500 or 1500,9000")
    return sorted(set(out))


def sim_ccas() -> list[str]:
    """The CCAs the simulator implements."""
    from ..backends.sim import _native
    return list(_native().available_ccas())


class RequestError(SpecError):
    """The request is invalid; ``problems`` lists (key, message) pairs."""

    def __init__(self, problems: list[tuple[str, str]], source: str = "") -> None:
        super().__init__(problems, source)
        head = f"invalid advise request{f' {source}' if source else ''}:"
        self.args = ("\n".join([head] + [f"  {k}: {m}" for k, m in problems]),)


class AdviseRequest(spec_mod._Strict):
    """The path and the choices, in SI units (spec.py's types)."""

    rate: RateBps
    rtt: RttS
    loss: Probability = 0.0
    mtu: Annotated[list[int], BeforeValidator(_mtus)] = [1500]
    buffer: Annotated[Buffer, BeforeValidator(parse_buffer)] = Buffer(amount=1, unit="bdp")
    rmem: SizeBytes = spec_mod.LINUX_RMEM_MAX_BYTES
    wmem: SizeBytes = spec_mod.LINUX_WMEM_MAX_BYTES
    stream_cap: RateBps | None = None
    # Default: every mainline-Linux CCA the simulator has that needs no ECN
    # marking at the bottleneck (dctcp is a data-centre setting), Linux's
    # default first (fatpipe.ccas.deployable_defaults); bbr3 (out-of-tree)
    # only when asked for.
    ccas: Annotated[list[str], BeforeValidator(_split_list)] = Field(default_factory=cca_registry.deployable_defaults)
    max_streams: Annotated[int, Field(ge=1, le=MAX_MAX_STREAMS)] = DEFAULT_MAX_STREAMS
    competing: Annotated[str, Field(pattern=r"^[a-z0-9_]+$")] | None = None
    budget: DurationS = DEFAULT_BUDGET_S
    host_profile: Annotated[str, BeforeValidator(_profile_name)] | None = None
    host: Annotated[dict[str, Any], BeforeValidator(_host_keys)] = {}

    @field_validator("ccas", "competing")
    @classmethod
    def _known_ccas(cls, names: list[str] | str | None) -> list[str] | str | None:
        if names is None or isinstance(names, str) and names in sim_ccas():
            return names
        available = sim_ccas()
        names = [names] if isinstance(names, str) else names
        unknown = [n for n in names if n not in available]
        if unknown or not names:
            raise ValueError(f"got {', '.join(map(repr, unknown)) or 'none'}; the simulator has "
                             f"{', '.join(available)}")
        return list(dict.fromkeys(names))

    def host_problems(self) -> list[tuple[str, str]]:
        """What the resolved host keys get wrong together (hostcpu.NEEDS_CORES without cpu_cores)."""
        keys = self.host_keys()
        lacking = [k for k in hostcpu.NEEDS_CORES if k in keys] if keys.get("cpu_cores") is None else []
        if not lacking:
            return []
        return [("host", f"{', '.join(lacking)} apply to the CPU cost model, which is on only with cpu_cores: "
                         "give host.cpu_cores (or a host_profile that sets it)")]

    def host_keys(self) -> dict[str, Any]:
        """The hosts' resolved model keys: the profile's under the [host]
        table's ({} with neither: infinitely fast hosts)."""
        keys = hostprofiles.profile_keys(self.host_profile) if self.host_profile else {}
        return {**{k: v for k, v in keys.items() if k in HOST_KEYS}, **self.host}

    def host_model(self) -> str | None:
        """What the host model is, in words (None without one)."""
        own = "the request's [host] keys"
        if self.host_profile:
            return f"host profile {self.host_profile!r}" + (f" under {own}" if self.host else "")
        return own if self.host else None

    def buffer_bytes(self, mtu: int) -> int:
        """The bottleneck buffer in bytes on this path at `mtu`."""
        return self.buffer.to_bytes(self.rate, self.rtt, mtu)

    def describe(self) -> str:
        from ..units import format_rate, format_time
        buf = f"{self.buffer.amount:g} {self.buffer.unit}"
        return (f"{format_rate(self.rate)}, RTT {format_time(self.rtt)}, loss {self.loss:g}, "
                f"MTU {'/'.join(map(str, self.mtu))}, buffer {buf}")


def validate_request(raw: dict[str, Any], source: str = "") -> AdviseRequest:
    """A raw mapping (flags or TOML) → AdviseRequest, or a SpecError naming the key."""
    raw = {k: v for k, v in raw.items() if v is not None}
    try:
        req = AdviseRequest.model_validate(raw)
    except ValidationError as e:
        raise RequestError(validation_problems(e), source) from None
    if problems := req.host_problems():
        raise RequestError(problems, source)
    return req


def load_request(path: str | Path, overrides: dict[str, Any] | None = None) -> AdviseRequest:
    """A request file (keys as the module doc), flags in `overrides` winning."""
    try:
        raw = spec_mod.load_raw(path)
    except SpecError as e:
        raise RequestError(e.problems, str(path)) from None
    raw.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return validate_request(raw, str(path))
