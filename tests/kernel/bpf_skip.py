"""Why the BPF-port kernel tests cannot run here (None: they can): one
check for every test file that registers fatpipe's BPF ports."""

import os

from fatpipe.backends.kernel import bpfcca


def bpf_ports_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (BPF struct_ops, network namespaces)"
    return bpfcca.ports_unavailable()
