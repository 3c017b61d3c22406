#!/usr/bin/env bash
# Runs every test: the Rust crates, then the Python suite (kernel tests need
# root and skip themselves otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
# Rust lints first: every clippy warning is an error (rules in Cargo.toml's
# [workspace.lints]).
cargo clippy -q --release --workspace --all-targets -- -D warnings
cargo test -q --release --workspace --exclude fatpipe-py
PY=${PYTHON:-python3}
# Python lints (rules in pyproject.toml; ruff comes with the `test` extra).
"$PY" -m ruff check python tests bench scripts build_support
"$PY" -m pytest -q tests
