"""Test helper: the run plans of a study spec given as TOML text."""

import textwrap

from fatpipe import spec as spec_mod
from fatpipe.study import plan_runs


def plans_for(text, tmp_path):
    """Write `text` (dedented) as a spec under `tmp_path` and plan its runs."""
    p = tmp_path / "s.toml"
    p.write_text(textwrap.dedent(text))
    spec, raw = spec_mod.load(p)
    return plan_runs(spec, raw)
