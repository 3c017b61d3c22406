"""Pure parts of the kernel backend's BPF CCA support (no root needed)."""

import json

from fatpipe.backends.kernel import bpfcca
from fatpipe.linuxpath.flows import ccas_in_samples


def test_port_list_parses_name_file_and_hash_and_skips_malformed_lines():
    text = "htcp\thtcp.bpf.c\tabc\nbad line\nfp_reno\tfp_reno.bpf.c\tdef\n\t\t\n"
    ports = bpfcca.parse_port_list(text)
    assert ports == {"htcp": bpfcca.Port("htcp", "htcp.bpf.c", "abc"),
                     "fp_reno": bpfcca.Port("fp_reno", "fp_reno.bpf.c", "def")}


def test_source_hash_covers_the_port_and_every_shared_header(tmp_path):
    (tmp_path / "x.bpf.c").write_text("port")
    (tmp_path / "a.h").write_text("one")
    h1 = bpfcca.source_sha256("x", tmp_path)
    (tmp_path / "a.h").write_text("two")
    assert bpfcca.source_sha256("x", tmp_path) != h1
    assert bpfcca.source_sha256("missing", tmp_path) is None


def test_a_loader_missing_a_port_or_with_an_old_source_is_stale(tmp_path):
    (tmp_path / "x.bpf.c").write_text("port")
    good = {"x": bpfcca.Port("x", "x.bpf.c", bpfcca.source_sha256("x", tmp_path))}
    assert not bpfcca.is_stale(good, tmp_path)
    assert bpfcca.is_stale({"x": bpfcca.Port("x", "x.bpf.c", "old")}, tmp_path)
    assert bpfcca.is_stale({}, tmp_path)


def test_only_used_ccas_the_kernel_lacks_are_loaded_from_ports():
    ports = {n: bpfcca.Port(n, f"{n}.bpf.c", "h") for n in ("htcp", "dctcp", "cubic")}
    assert bpfcca.ports_to_load(["cubic", "htcp"], ["reno", "cubic"], ports) == ["htcp"]
    assert bpfcca.ports_to_load(["reno"], ["reno"], ports) == []
    assert bpfcca.cca_sources(["cubic", "dctcp", "vegas"], ["cubic"], ports) == {
        "cubic": "kernel", "dctcp": "fatpipe-bpf", "vegas": None}


def test_samples_report_the_ccas_the_kernel_gave_the_sockets():
    lines = [json.dumps({"t_s": 0.1, "stream": 0, "cc": "htcp"}), json.dumps({"t_s": 0.1, "stream": 1, "cc": "reno"}),
             json.dumps({"t_s": 0.2, "stream": 0}), ""]
    assert ccas_in_samples("\n".join(lines)) == ["htcp", "reno"]
