"""Reading a study file's TOML text within bounds: its size, and keys of
too many dotted parts (refused before Python's reader sees them, which
takes time quadratic in a key's parts). spec.py validates what it returns."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from .spec_errors import SpecError
from .spec_errors import printable as _printable
from .spec_errors import short as _short

# A study file is a short text; this bounds what reading it can cost.
MAX_SPEC_BYTES = 1 << 20
# Deepest nesting a valid spec needs is 6
# (sweep.linked[0]."path.buffer"[0].amount).
MAX_NESTING_DEPTH = 8
# Parts of one dotted key (`a.b.c = 1`, `[a.b.c]`), refused before parsing
# above this: every part is a table level, so a valid spec's keys have at
# most MAX_NESTING_DEPTH (a key of up to twice that reaches the reader and
# is refused after it, naming where). Python's TOML reader takes time and
# memory quadratic in a key's parts: 50,000 parts in 100 KB took 13 s and
# more than 4 GiB.
MAX_KEY_PARTS = 2 * MAX_NESTING_DEPTH

# TOML strings (multi-line basic and literal, basic, literal; a basic one's
# escapes) and comments, leftmost first: a string's dots are no key's. An
# unterminated string runs to the end of its line (or of the text): the
# reader refuses it anyway. A string's start always matches (a lone
# backslash is content too) and consumes what it scanned, so the strings
# are found in time linear in the text.
_STRING_OR_COMMENT = re.compile(
    r'"""(?:[^"\\]|\\.?|"(?!""))*+(?:"""|\Z)'
    r"|'''(?:[^']|'(?!''))*+(?:'''|\Z)"
    r'|"(?:[^"\\\n]|\\[^\n]?)*+(?:"|$)'
    r"|'[^'\n]*+(?:'|$)"
    r"|#[^\n]*+", re.S | re.M)
# A part of a key once strings are "" (bare or quoted), and more than
# MAX_KEY_PARTS parts joined by dots starting at a part's start
# (possessive: found in time linear in the text).
_KEY_PART = r'(?:[A-Za-z0-9_-]++|"")'
_LONG_DOTTED_KEY = re.compile(
    rf"(?<![A-Za-z0-9_-]){_KEY_PART}(?:[ \t]*+\.[ \t]*+{_KEY_PART}){{{MAX_KEY_PARTS}}}")


def _without_strings(text: str) -> str:
    """`text` with every string "" and every comment gone, lines kept."""
    def blank(m: re.Match) -> str:
        token = m.group(0)
        return ("" if token.startswith("#") else '""') + "\n" * token.count("\n")
    return _STRING_OR_COMMENT.sub(blank, text)


def long_dotted_key(text: str) -> str | None:
    """Why `text` is refused before the TOML reader sees it: a key of more
    than MAX_KEY_PARTS dotted parts (quoted parts shown as ""), or None."""
    text = _without_strings(text)
    m = _LONG_DOTTED_KEY.search(text)
    if m is None:
        return None
    line = text.count("\n", 0, m.start()) + 1
    return (f"a dotted key of more than {MAX_KEY_PARTS} parts at line {line} ({_printable(_short(m.group(0), 60))}); "
            f"a study spec nests at most {MAX_NESTING_DEPTH} levels, so its keys have at most "
            f"{MAX_NESTING_DEPTH} parts (refused before parsing)")


def load_raw(path: str | Path) -> dict[str, Any]:
    """The TOML table of a study file, read within MAX_SPEC_BYTES."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = f.read(MAX_SPEC_BYTES + 1)
    except OSError as e:
        raise SpecError([("file", f"cannot read {p}: {e.strerror or e}")]) from None
    if len(data) > MAX_SPEC_BYTES:
        raise SpecError([("file", (
            f"larger than {MAX_SPEC_BYTES} bytes; a study spec is a short text file"))], str(p))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError([("file", (
            f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
            "save the spec as UTF-8"))], str(p)) from None
    too_long = long_dotted_key(text)
    if too_long:
        raise SpecError([("toml", too_long)], str(p))
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError([("toml", str(e))], str(p)) from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise SpecError([("toml", f"a number the TOML reader cannot convert: {_short(str(e), 120)}")],
                        str(p)) from None
    except RecursionError:
        raise SpecError([("toml", (
            f"arrays or tables nested too deeply; a study spec needs at most {MAX_NESTING_DEPTH} levels"))],
            str(p)) from None
