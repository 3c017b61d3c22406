#!/usr/bin/env bash
# The ns-3 environment of bench/ns3_compare.py, in one command:
#   bash bench/install_ns3.sh [VENV]        (default VENV: ~/.cache/fatpipe-ns3-venv)
# ns-3 comes from PyPI (bench/requirements-ns3.txt: the `ns3` wheel, which
# builds cppyy, ~2-5 minutes) into a virtualenv of its own, outside the
# project's environment. It prints the line that points ns3_compare.py at it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/fatpipe-ns3-venv}"
case "$venv" in
  "$(cd "$here/.." && pwd)"/*) echo "install_ns3.sh: $venv is inside the checkout; give a directory outside it" >&2; exit 2;;
esac
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet -r "$here/requirements-ns3.txt"
"$venv/bin/python" -c 'from ns import ns; print("ready" if ns.Simulator.Now().GetSeconds() == 0 else "no")' 2>/dev/null \
  | grep -q ready || { echo "install_ns3.sh: ns-3 installed into $venv but does not import" >&2; exit 1; }
echo "export FATPIPE_NS3_PYTHON=$venv/bin/python"
