"""The IETF BBR draft's example test cases (draft-ietf-ccwg-bbr, Appendix
A) as a suite: the catalogue (data/bbr_cases.toml, catalogue.py), a study
per case and CCA (studies.py), each case's pass criteria evaluated from the
run's tables (checks.py), and the whole run with its table (suite.py;
`fatpipe bbr-cases`). docs/bbr-test-cases.md describes every case."""

from .suite import CaseResult, run_suite

__all__ = ["CaseResult", "run_suite"]
