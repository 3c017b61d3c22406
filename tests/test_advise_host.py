"""`fatpipe advise` on real hosts: what its recommendation says it changes,
the host model that caps its candidates (a profile or explicit keys), the
CPU it states, and the note when the hosts are taken as infinitely fast."""

from __future__ import annotations

import math

import pandas as pd

from fatpipe.advisor import plan as pl
from fatpipe.advisor import validate_request
from fatpipe.advisor.findings import recommendation
from fatpipe.advisor.rank import choose

MIB = 2**20


def _table(req, rows):
    """A ranked-like table of candidates (cc, streams, mtu, rmem MiB, wmem MiB, mean Gbit/s, runs)."""
    out = []
    for cc, streams, mtu, rmem, wmem, mean, n in rows:
        c = pl.Candidate(cc, streams, mtu, rmem * MIB, wmem * MIB)
        out.append({"candidate": c, "cc": cc, "streams": streams, "mtu_bytes": mtu, "mss_bytes": c.mss_bytes,
                    "rmem_bytes": c.rmem_bytes, "wmem_bytes": c.wmem_bytes,
                    "buffers": "raised" if "buffers" in pl.setup_changes(req, c) else "as now",
                    "n": n, "goodput_bps": mean * 1e9, "goodput_ci_low_bps": (mean - 0.5) * 1e9,
                    "goodput_ci_high_bps": (mean + 0.5) * 1e9, "retrans_rate": 1e-4, "window_bound": False,
                    "loss_halves_at": math.inf, "competing_share": math.nan, "jain": math.nan})
    t = pd.DataFrame(out).sort_values("goodput_bps", ascending=False, kind="stable").reset_index(drop=True)
    i, why = choose(t, req, largest_loss_tried=6.4e-3)
    t["recommended"] = t.index == i
    t.attrs.update(why={k: (t.loc[v, "candidate"] if k != "equal" else v) for k, v in why.items()},
                   largest_loss_tried=6.4e-3)
    return t


def test_simplest_candidate_sentence_names_what_the_chosen_setup_changes():
    # The bad case of issue P1.2: every candidate as good as the best raises
    # the buffers and uses MTU 9000; the sentence used to read "no sysctl
    # change, standard MTU" above a recommendation doing both.
    req = validate_request({"rate": "100Gbit", "rtt": "70ms", "loss": 1e-4, "mtu": [1500, 9000]})
    t = _table(req, [("bbr", 4, 9000, 415, 415, 95.0, 3), ("bbr", 8, 9000, 208, 208, 95.1, 3),
                     ("cubic", 16, 1500, 6, 4, 2.0, 3)])
    text = recommendation(t, req)
    assert "Use bbr with 4 streams at MTU 9000, tcp_rmem max 415 MiB" in text, text
    assert "no sysctl change, standard MTU" not in text
    assert ("against today's setup it raises tcp_rmem max to 415 MiB and tcp_wmem max to 415 MiB (sysctl), "
            "uses MTU 9000, opens 4 parallel streams and runs bbr instead of cubic.") in text, text


def test_setup_changes_is_empty_for_todays_setup_and_orders_changes_as_the_rule_weighs_them():
    req = validate_request({"rate": "10Gbit", "rtt": "20ms", "mtu": [1500, 9000]})
    today = pl.baseline(req)
    assert pl.setup_changes(req, today) == {}
    c = pl.Candidate("htcp", 2, 9000, req.rmem * 4, req.wmem)
    assert list(pl.setup_changes(req, c)) == list(pl.CHANGE_KINDS)
    t = _table(req, [("cubic", 1, 1500, req.rmem // MIB, req.wmem // MIB, 9.0, 3),
                     ("cubic", 2, 1500, req.rmem // MIB, req.wmem // MIB, 9.0, 3)])
    assert "against today's setup it changes nothing." in recommendation(t, req)
