"""What the path did in a run: the delay line's and bottleneck's counters."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..schema import PathReport


@dataclass
class PathStats:
    emulator: str
    packets: int = 0  # data segments offered to the loss stage
    random_drops: int = 0
    queue_drops: int = 0  # tbf drops
    ce_marks: int = 0  # ECN-capable segments the bottleneck marked CE
    bottleneck_bytes: int = 0
    late_p50_s: float | None = None
    late_p99_s: float | None = None
    late_max_s: float | None = None
    host_drops: int = 0  # ACKs dropped by a full veth NAPI ring toward a sender
    policer_drops: int = 0  # data segments the path's policer dropped (a moving path)
    reordered: int = 0  # packets that overtook one sent earlier (jitter with reordering)
    details: dict = field(default_factory=dict)
    counts_bottleneck: bool = True  # False: nothing counted the bottleneck's bytes (a real path)

    def report(self, traffic_rows: list[dict], duration_s: float,
               clock_uncertainty_s: float | None = None) -> PathReport:
        """The run's PathReport (kernel and hosts backends): these counters
        and the smallest RTT any sampled stream saw."""
        min_rtts = [r["min_rtt_s"] for r in traffic_rows if r["min_rtt_s"] > 0]
        counted = self.counts_bottleneck and duration_s > 0
        return PathReport(
            emulator=self.emulator,
            min_rtt_s=min(min_rtts) if min_rtts else None,
            packets=self.packets,
            random_drops=self.random_drops,
            queue_drops=self.queue_drops,
            ce_marks=self.ce_marks,
            bottleneck_bps=self.bottleneck_bytes * 8 / duration_s if counted else None,
            late_p99_s=self.late_p99_s,
            late_max_s=self.late_max_s,
            clock_uncertainty_s=clock_uncertainty_s,
            host_drops=self.host_drops,
            policer_drops=self.policer_drops,
            reordered=self.reordered,
        )
