#!/usr/bin/env bash
# Installs everything fatpipe needs on a fresh Debian machine, as root:
# Debian packages for the kernel backend, the Python package with its Rust
# simulator extension, and the fatpipe-linkem delay line. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ]; then
  apt-get update -qq
  # iproute2: ip netns, tc (tbf); iptables: NFQUEUE for the delay line;
  # iperf3: cross-check of the traffic engine; ethtool: offload settings;
  # chromium: renders reports headless for the report test;
  # openssh-server, netcat-openbsd, faketime: the hosts backend's tests run
  # real sshd in namespaces, reached through `nc`, one with a skewed clock;
  # clang: compiles the BPF congestion controls (bpf/cca); libelf-dev,
  # zlib1g-dev, pkg-config, make: libbpf-sys builds libbpf for the loader
  # (crates/ccaload); bpftool: `fatpipe clean` lists struct_ops left by
  # other tools (docs/bpf-ccas.md); tcpdump: packet captures on the kernel
  # backend (docs/captures.md).
  apt-get install -y -qq --no-install-recommends \
    iproute2 iptables iperf3 ethtool procps kmod build-essential pkg-config \
    ca-certificates python3-pip chromium openssh-server netcat-openbsd faketime \
    clang llvm libelf-dev zlib1g-dev make bpftool tcpdump >/dev/null
else
  echo "install.sh: not root, skipping Debian packages (the kernel backend needs root anyway)" >&2
fi

if ! command -v cargo >/dev/null 2>&1; then
  # Debian's Rust, when the machine has no rustup toolchain.
  apt-get install -y -qq --no-install-recommends cargo rustc >/dev/null
fi

# clippy lints the Rust code in the test command.
if ! cargo clippy --version >/dev/null 2>&1; then
  if command -v rustup >/dev/null 2>&1; then
    rustup component add clippy
  else
    apt-get install -y -qq --no-install-recommends rust-clippy >/dev/null
  fi
fi

PY=${PYTHON:-python3}
"$PY" -m pip install -q --root-user-action=ignore --upgrade "maturin>=1.5,<2"
# Builds the Rust simulator (release profile) into fatpipe._native.
"$PY" -m pip install -q --root-user-action=ignore -e ".[test]"
cargo build -q --release -p fatpipe-linkem
# The BPF congestion-control loader, with the ports compiled in (build.rs).
cargo build -q --release -p fatpipe-ccaload
echo "fatpipe installed: $("$PY" -m fatpipe --version)"
