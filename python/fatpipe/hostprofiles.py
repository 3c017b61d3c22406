"""Named host profiles (python/fatpipe/data/host_profiles.toml): load them,
validate each with the rules of a study's [hosts.<name>] table, and give
their names (`PROFILES`), their keys (`profile_keys`) and what each is
(`profile`: its description, the Linux version it models, the source of
every value).

The file is read once, when this module is imported; a profile that does
not validate is an error then, naming the profile and the key.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import hostcpu
from .spec import HostSection
from .spec_errors import validation_problems
from .units import toml_type

PROFILES_FILE = "host_profiles.toml"  # in the package's data/ folder
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,32}")
Text = Annotated[str, Field(min_length=1)]


class _About(BaseModel):
    """What a profile's table holds besides its [hosts] keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    description: Text
    kernel: Text | None = None  # the Linux version whose behaviour it models, e.g. "3.10"
    sources: dict[str, Text] = {}  # [hosts] key -> where its value comes from


ABOUT_KEYS = tuple(_About.model_fields)


@dataclass(frozen=True)
class HostProfile:
    name: str
    description: str
    kernel: str | None  # the Linux version whose behaviour it models
    keys: dict[str, Any]  # [hosts] key -> its value, validated (SI numbers, as HostSection holds it)
    sources: dict[str, str]  # [hosts] key -> where its value comes from


class ProfileError(ValueError):
    """The profiles file is invalid. ``problems`` lists (key path, message) pairs."""

    def __init__(self, problems: list[tuple[str, str]], source: str) -> None:
        self.problems = problems
        super().__init__("\n".join([f"invalid host profiles {source}:"] + [f"  {k}: {m}" for k, m in problems]))


def _profile_problems(name: str, keys: dict[str, Any], about: _About) -> list[tuple[str, str]]:
    """A profile's keys each have a source, its sources each name a key, and
    the cost model's keys come with cpu_cores."""
    problems = [(f"{name}.{key}", f"has no source: add {name}.sources.{key} (a measurement, a paper, a vendor note)")
                for key in keys if key not in about.sources]
    problems += [(f"{name}.sources.{key}", (
        f"names no key this profile sets (it sets {', '.join(keys) or 'none'})")) for key in about.sources
        if key not in keys]
    if "cpu_cores" not in keys:
        problems += [(f"{name}.{key}", (
            f"{key} applies to the CPU cost model, which is on only with cpu_cores: a profile that sets it "
            "sets cpu_cores too")) for key in hostcpu.NEEDS_CORES if key in keys]
    return problems


def load(text: str, source: str) -> dict[str, HostProfile]:
    """The profiles of a profiles file's `text` (`source` names it in errors)."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ProfileError([("toml", str(e))], source) from None
    profiles, problems = {}, []
    for name, table in raw.items():
        if not NAME_PATTERN.fullmatch(name):
            problems.append((name[:40], "a profile's name is 1 to 32 letters, digits, '_' or '-'"))
            continue
        if not isinstance(table, dict):
            problems.append((name, f"a profile is a table ([{name}]), got {toml_type(table)}"))
            continue
        if "profile" in table:
            problems.append((f"{name}.profile", "a profile cannot name another profile"))
            continue
        try:
            about = _About.model_validate({k: v for k, v in table.items() if k in ABOUT_KEYS})
            section = HostSection.model_validate({k: v for k, v in table.items() if k not in ABOUT_KEYS})
        except ValidationError as e:
            problems += validation_problems(e, prefix=f"{name}.")
            continue
        keys = {k: getattr(section, k) for k in section.model_fields_set}
        problems += _profile_problems(name, keys, about)
        profiles[name] = HostProfile(name, about.description, about.kernel, keys, dict(about.sources))
    if problems:
        raise ProfileError(problems, source)
    return profiles


def _bundled() -> dict[str, HostProfile]:
    data = resources.files(__package__).joinpath("data").joinpath(PROFILES_FILE)
    return load(data.read_text(encoding="utf-8"), f"fatpipe/data/{PROFILES_FILE}")


_PROFILES = _bundled()
PROFILES = tuple(_PROFILES)  # the names, in the file's order


def profile(name: str) -> HostProfile:
    """The profile `name` (one of PROFILES; KeyError otherwise)."""
    return _PROFILES[name]


def profile_keys(name: str) -> dict[str, Any]:
    """The [hosts] keys profile `name` sets, validated: {key: value}."""
    return dict(_PROFILES[name].keys)
