"""`fatpipe advise` on real hosts: what its recommendation says it changes,
the host model that caps its candidates (a profile or explicit keys), the
CPU it states, and the note when the hosts are taken as infinitely fast."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from fatpipe.advisor import RequestError, validate_request
from fatpipe.advisor import plan as pl
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


# ---- the host model ----

# A 4-core host whose core drives ~27 Gbit/s for one stream at MTU 1500
# (receiving binds: 0.2 + 0.1 µs / 1448 + 1.5 µs / 65160 = 0.292 ns a
# byte), behind a 100 Gbit/s NIC, with GRO.
HOST_100G = {"cpu_cores": 4, "gro": True, "nic_rate": "100Gbit", "cost_send_byte": "0.1ns",
             "cost_send_packet": "2us", "cost_ack": "1us", "cost_sack_block": "0.3us",
             "cost_receive_byte": "0.2ns", "cost_receive_packet": "0.1us", "cost_receive_unit": "1.5us"}
# The same host ten times slower, for a 10 Gbit/s path that runs fast:
# its core drives ~2.7 Gbit/s.
HOST_10G = {"cpu_cores": 4, "gro": True, "cost_send_byte": "1ns", "cost_send_packet": "20us",
            "cost_ack": "10us", "cost_sack_block": "3us", "cost_receive_byte": "2ns",
            "cost_receive_packet": "1us", "cost_receive_unit": "15us"}


def test_every_candidate_is_capped_by_what_the_host_drives_at_100gbit():
    # Issue P1.2: at 100 Gbit/s, 70 ms, 1e-4 the advice ranked one BBR
    # stream at 95 Gbit/s with 3.3 GiB buffers, which no host delivers.
    req = validate_request({"rate": "100Gbit", "rtt": "70ms", "loss": 1e-4, "host": HOST_100G})
    per_core = 8 / (0.2e-9 + 0.1e-6 / 1448 + 1.5e-6 / (45 * 1448))
    bbr1 = next(c for c in pl.coarse_candidates(req) if (c.cc, c.streams) == ("bbr", 1))
    assert pl.core_drive(req, bbr1).bps == pytest.approx(per_core)
    assert pl.stream_cap_bps(req, bbr1) == pytest.approx(per_core)
    assert pl.expected_goodput_bps(req, bbr1) == pytest.approx(per_core)
    # Its buffers are those of the rate one core drives, not of the whole path.
    assert bbr1.rmem_bytes < 0.3 * pl.tuned_buffers(validate_request({"rate": "100Gbit", "rtt": "70ms"}), 1500, 1)[0]
    for c in pl.coarse_candidates(req):
        cap = pl.stream_cap_bps(req, c)
        assert cap <= pl.core_drive(req, c).bps * (1 + 1e-12)
        assert pl.expected_goodput_bps(req, c) <= min(c.streams, 4) * pl.core_drive(req, c).bps * (1 + 1e-12)
        assert pl.expected_goodput_bps(req, c) <= 100e9 * 1448 / 1514 * (1 + 1e-12)
        if c.streams > 4:  # 16 streams share 4 cores
            assert cap == pytest.approx(pl.core_drive(req, c).bps * 4 / c.streams)
    # The stage carries the caps (linked, one per candidate), the NIC and GRO to the simulator.
    cands = pl.coarse_candidates(req)
    raw = pl.stage_raw(req, "coarse", cands, pl.timing(req), 1, seed=1)
    assert raw["sweep"]["linked"][0][pl.STREAM_CAP_KEY] == [pl.stream_cap_bps(req, c) for c in cands]
    assert raw["hosts"]["s1"]["nic_rate"] == 100e9 and raw["hosts"]["receiver"]["gro"] is True
    import tomllib

    from fatpipe import spec as spec_mod
    spec_mod.validate(tomllib.loads(pl.toml_text(raw)))
    # Without a host model the stage is as before: no cap, no NIC, no GRO.
    plain = validate_request({"rate": "100Gbit", "rtt": "70ms", "loss": 1e-4})
    raw = pl.stage_raw(plain, "coarse", pl.coarse_candidates(plain), pl.timing(plain), 1, seed=1)
    assert raw["hosts"] == {"receiver": {"rmem_max": plain.rmem}, "s1": {"wmem_max": plain.wmem}}
    assert list(raw["sweep"]["linked"][0]) == list(pl.CANDIDATE_KEYS)


def test_advice_with_a_host_model_never_promises_a_stream_more_than_a_core_and_states_the_cpu(tmp_path):
    from fatpipe.advisor import run_advice
    from fatpipe.advisor.render import terminal_text
    req = validate_request({"rate": "10Gbit", "rtt": "20ms", "loss": 1e-4, "ccas": ["cubic", "bbr"],
                            "max_streams": 4, "budget": "20s", "host": HOST_10G})
    advice = run_advice(req, out=tmp_path, emit=lambda _line: None)
    t = advice.table
    per_core = pl.core_drive(req, pl.baseline(req)).bps
    assert 2.6e9 < per_core < 2.8e9
    for _, r in t.iterrows():
        assert r["goodput_bps"] <= min(r["streams"], 4) * r["stream_cap_bps"] * 1.02, r.to_dict()
        assert r["stream_cap_bps"] <= per_core * (1 + 1e-9)
    # One BBR stream is held to a core; the link needs four.
    one = t[(t["cc"] == "bbr") & (t["streams"] == 1)]
    assert not one.empty and (one["goodput_bps"] <= per_core * 1.02).all()
    rec = t[t["recommended"]].iloc[0]
    assert rec["streams"] == 4 and rec["goodput_bps"] > 9e9, t.to_string()
    text = advice.hosts
    assert "one core drives 2.7" in text and "needs 4 cores at each end for its 4 streams (1 per core" in text, text
    assert "pace each stream at no more than 2.7" in text and "bbr paces itself" in text, text
    assert text in terminal_text(advice)
    assert any(a.startswith("Hosts: the request's [host] keys") for a in advice.assumptions)


def test_without_a_host_model_the_advice_says_the_hosts_are_infinitely_fast():
    from fatpipe.advisor.findings import assumptions, host_finding
    for keys, what in (({}, "no host model was given"),
                       ({"host_profile": "ideal"}, "host profile 'ideal' has no CPU cost model")):
        req = validate_request({"rate": "100Gbit", "rtt": "70ms", "loss": 1e-4, **keys})
        t = _table(req, [("bbr", 1, 1500, 3193, 3193, 95.0, 3)])
        text = host_finding(t, req)
        assert text.startswith("Hosts assumed infinitely fast: " + what), text
        assert "--host-profile NAME, one of ideal" in text
        assert any(a.startswith("No host model: the hosts are infinitely fast") for a in
                   assumptions(req, pl.timing(req)))


def test_host_keys_are_validated_naming_the_key():
    bad = [({"host": {"rmem_max": "1MiB"}}, "host takes the host-model keys"),
           ({"host": {"cpu_cores": 0}}, "cpu_cores is a whole number of cores from 1 to 1024"),
           ({"host": {"cost_ack": "1us"}}, "host: cost_ack apply to the CPU cost model"),
           ({"host_profile": "nope"}, "host_profile: got 'nope'; host profiles: ideal")]
    for keys, message in bad:
        with pytest.raises(RequestError) as e:
            validate_request({"rate": "10Gbit", "rtt": "20ms", **keys})
        assert message in str(e.value), str(e.value)
    req = validate_request({"rate": "10Gbit", "rtt": "20ms", "host_profile": "ideal", "host": {"cpu_cores": 2}})
    assert req.host_keys() == {"cpu_cores": 2}
    assert req.host_model() == "host profile 'ideal' under the request's [host] keys"


def test_the_testbed_probe_reports_its_busiest_core_and_a_saturated_one():
    from fatpipe.advisor.measure import MeasuredPath, probe_cpu
    runs = pd.DataFrame({"cpu_busy_max_core_frac": [0.62, 0.97, None],
                         "flags": ["", "cpu_bound,rate_short", None]})
    assert probe_cpu(runs) == (0.97, True)
    assert probe_cpu(runs.iloc[[0]]) == (0.62, False)
    assert probe_cpu(pd.DataFrame({"goodput_bps": [1.0]})) == (None, False)
    path = MeasuredPath(1e9, (0.9e9, 1.1e9), 0.02, (0.02, 0.021), 1e-4, (0.0, 1e-3), 1, 10000, "s1", 0.97, True)
    line = path.lines()[-1]
    assert "97 % busy" in line and "the hosts' limit rather than the path's" in line
    assert "not measured" in MeasuredPath(1e9, (0.9e9, 1.1e9), 0.02, (0.02, 0.021), 1e-4, (0.0, 1e-3), 1, 10000,
                                          "s1").cpu_line()
