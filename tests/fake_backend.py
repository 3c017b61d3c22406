"""A deterministic stand-in backend for store/summary tests: each stream
delivers at a constant rate that depends on the plan, so every summary value
is known exactly."""

from fatpipe.backends.base import Backend, PathReport, RunOutcome, RunPlan
from fatpipe.schema import SERIES_COLUMNS, no_cc_vars


class FakeReport:
    usable = True

    def render(self):
        return "  [ok] fake backend: always usable"


class FakeBackend(Backend):
    name = "sim"

    def __init__(self, interrupt_after=None):
        self.calls = []
        self.interrupt_after = interrupt_after

    def check(self, plans):
        pass

    def facts(self):
        return {"fake": True}

    def max_parallel_runs(self, jobs):
        return jobs

    def doctor(self):
        return FakeReport()

    def clean(self):
        return []

    def clean_stale(self):
        return []

    def run(self, plan: RunPlan, workdir) -> RunOutcome:  # noqa: ARG002 - the Backend protocol's signature
        if self.interrupt_after is not None and len(self.calls) >= self.interrupt_after:
            raise KeyboardInterrupt
        self.calls.append(plan.run_id)
        if plan.flows[0].cc == "broken":
            raise RuntimeError("backend exploded")
        out = RunOutcome(path=PathReport(emulator="fake", min_rtt_s=plan.rtt_s, packets=100000,
                                         random_drops=int(100000 * plan.loss)))
        rate_bytes_per_s = 1e6 * (1 + plan.rep)
        steps = int(round(plan.duration_s / plan.sample_interval_s))
        for f in plan.flows:
            for stream in range(f.streams):
                for i in range(steps + 1):
                    t = i * plan.sample_interval_s
                    row = {
                        "flow_group": f.group, "stream": stream, "t_s": t,
                        "delivered_bytes": int(rate_bytes_per_s * t), "cwnd_segments": 10,
                        "srtt_s": plan.rtt_s + 0.001 * (i % 10), "min_rtt_s": plan.rtt_s,
                        "retrans_segments": i, "segs_out": 100 * i, "pacing_rate_bps": 0.0,
                        "delivery_rate_bps": rate_bytes_per_s * 8, "inflight_segments": 10,
                        "ca_state": "open", "cc_mode": "",
                        "rwnd_limited_s": 0.5 * t if f.group == 1 else 0.0,
                        "sndbuf_limited_s": 0.0, "busy_s": t, **no_cc_vars(),
                    }
                    for k in SERIES_COLUMNS:
                        out.series[k].append(row[k])
        return out
