"""The report states what the sockets of runs on real Linux ran with (the
runs' streams_read_back facts: linuxpath/readback.py), each distinct value
per backend and flow group; a study without such runs has no section."""

import json

from fatpipe.report.run_sections import readback_section
from store_run import run_spec_text

STUDY = """
version = 1
[study]
name = "readback"
duration = "1s"
repetitions = 2
[path]
rate = "20Mbit"
rtt = "20ms"
[[flows]]
cc = "cubic"
streams = 2
"""


def _stream(stream: int, mss: int, wscale: int) -> dict:
    return {"flow_group": 0, "stream": stream, "ccas": ["cubic"], "snd_mss_bytes": mss, "ecn": False,
            "max_pacing_rate_bps": None, "sack": True, "timestamps": True, "snd_wscale": wscale}


def test_the_report_lists_each_value_the_sockets_read_back(tmp_path):
    store, plans = run_spec_text(tmp_path / "out", STUDY)
    assert readback_section(store.load()) is None  # the simulator's runs have no sockets
    for i, p in enumerate(plans):  # as a Linux backend records them
        record = store.record_path(p.run_id)
        rec = json.loads(record.read_text())
        rec["facts"]["streams_read_back"] = [_stream(0, 1448, 7), _stream(1, 1448, 7 + i)]
        record.write_text(json.dumps(rec))
    section = readback_section(store.load())
    assert section is not None and section.title == "What the sockets ran with"
    html = section.body
    for text in ("cubic", "1448", "7, 8", "not set", "True", "False"):
        assert text in html, text
    assert ">4<" in html  # 2 streams x 2 repetitions
