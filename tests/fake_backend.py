"""A deterministic stand-in backend for store/summary tests: each stream
delivers at a constant rate that depends on the plan, so every summary value
is known exactly."""

from fatpipe.backends.base import PathReport, RunOutcome, RunPlan


class FakeReport:
    def render(self):
        return "  [ok] fake backend: always usable"


class FakeBackend:
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
                    s = out.series
                    s["flow_group"].append(f.group)
                    s["stream"].append(stream)
                    s["t_s"].append(t)
                    s["delivered_bytes"].append(int(rate_bytes_per_s * t))
                    s["cwnd_segments"].append(10)
                    s["srtt_s"].append(plan.rtt_s + 0.001 * (i % 10))
                    s["min_rtt_s"].append(plan.rtt_s)
                    s["retrans_segments"].append(i)
                    s["segs_out"].append(100 * i)
                    s["pacing_rate_bps"].append(0.0)
                    s["delivery_rate_bps"].append(rate_bytes_per_s * 8)
                    s["inflight_segments"].append(10)
                    s["ca_state"].append("open")
                    s["rwnd_limited_s"].append(0.5 * t if f.group == 1 else 0.0)
                    s["sndbuf_limited_s"].append(0.0)
                    s["busy_s"].append(t)
        return out
