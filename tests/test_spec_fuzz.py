"""Every hostile spec is valid or a SpecError naming its key: never a
traceback, a hang or a memory blow-up (cases from tests/spec_fuzz.py).

Most cases are checked in this process, as `fatpipe check` does (load,
validate, plan); the ones that could hang or exhaust memory (deep nesting,
sweep bombs, huge files, /dev/zero) run `python3 -m fatpipe check` in a
subprocess under a 1 GiB address-space limit and a 10 s timeout.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import spec_fuzz


def test_at_least_500_hostile_specs_across_every_class(tmp_path):
    cases = spec_fuzz.cases(tmp_path)
    assert len(cases) >= 500
    classes = Counter(c.cls for c in cases)
    assert len(classes) >= 15 and min(classes.values()) >= 2, classes


def test_every_hostile_spec_is_valid_or_rejected_naming_its_key(tmp_path):
    cases = spec_fuzz.cases(tmp_path)
    failures = []
    outcomes: Counter = Counter()
    for i, case in enumerate(cases):
        outcome, detail = spec_fuzz.check_case(case, spec_fuzz.case_path(case, tmp_path, i))
        outcomes[outcome] += 1
        if not spec_fuzz.acceptable(case, outcome):
            want = f"a SpecError naming {case.key or 'a key'}"
            if not case.must_reject:
                want = "valid or " + want
            failures.append(f"[{case.cls}] {case.name!r}: {outcome}, wanted {want}: "
                            f"{detail.replace(chr(10), ' | ')[:300]}")
    assert not failures, f"{len(failures)} of {len(cases)} cases ({dict(outcomes)}):\n" + "\n".join(failures)
