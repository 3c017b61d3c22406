#!/usr/bin/env bash
# Runs every test: the Rust crates, then the Python suite (kernel tests need
# root and skip themselves otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -q --release --workspace --exclude fatpipe-py
PY=${PYTHON:-python3}
# Python lints (rules in pyproject.toml; ruff comes with the `test` extra).
"$PY" -m ruff check python tests bench scripts
"$PY" -m pytest -q tests
