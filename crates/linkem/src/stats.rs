//! Counters per queue and a lateness histogram (verdict time − due time).

/// Lateness histogram with 1 µs buckets up to 1 s plus an overflow bucket.
pub struct LateHist {
    buckets: Vec<u64>,
    count: u64,
    max_ns: u64,
}

const BUCKETS: usize = 1_000_000;

impl Default for LateHist {
    fn default() -> Self {
        LateHist { buckets: vec![0; BUCKETS + 1], count: 0, max_ns: 0 }
    }
}

impl LateHist {
    pub fn record(&mut self, late_ns: u64, n: u64) {
        let b = ((late_ns / 1000) as usize).min(BUCKETS);
        self.buckets[b] += n;
        self.count += n;
        self.max_ns = self.max_ns.max(late_ns);
    }

    /// Upper edge of the bucket holding quantile `q`, in seconds.
    pub fn quantile_s(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return if i == BUCKETS { self.max_s() } else { (i as f64 + 1.0) * 1e-6 };
            }
        }
        self.max_s()
    }

    pub fn max_s(&self) -> f64 {
        self.max_ns as f64 * 1e-9
    }
}

#[derive(Default)]
pub struct QueueStats {
    pub packets: u64,
    pub bytes: u64,
    /// TCP segments carrying payload: the packets the loss stage acts on.
    pub data_packets: u64,
    pub dropped: u64,
    /// Tail drops of the bottleneck buffer.
    pub queue_drops: u64,
    /// Wire bytes accepted into the bottleneck (sent once due).
    pub bottleneck_bytes: u64,
    /// ECN-capable packets the bottleneck's CE threshold marked (the CE
    /// codepoint written into the packet handed back with its verdict).
    pub ce_marks: u64,
    /// Packets the threshold would have marked but whose copy was
    /// truncated, so they passed unmarked (0 unless the kernel copied less
    /// than the 64 KiB a marking queue asks for).
    pub ce_unmarkable: u64,
    pub gso_packets: u64,
    pub max_packet_bytes: u32,
    pub held_max: usize,
    pub timestamps_seen: u64,
    pub late: LateHist,
    /// How long packets waited in the NFQUEUE socket before linkem read them
    /// (read time − kernel arrival timestamp).
    pub read_wait: LateHist,
    /// Wall time of each batch verdict call: re-injected packets run through
    /// the rest of the stack (veth, the receiving TCP) inside that call.
    pub verdict_call: LateHist,
    /// Time between the starts of two reads of this queue's socket by its
    /// thread (a long gap while packets wait shows the thread was busy or
    /// held off; a long read wait without one, that they waited elsewhere).
    pub read_gap: LateHist,
    /// Batch verdicts sent (each releases every packet due by then).
    pub verdict_batches: u64,
    /// Unit mode (units.rs): GSO packets held whole, the segments they
    /// carried, GSO packets handed to the split queue, and split segments
    /// that matched no decided fate (0 unless a flow's MSS was wrong).
    pub units: u64,
    pub unit_segments: u64,
    pub split_units: u64,
    pub unit_mismatches: u64,
    /// Unit mode: GSO packets none of whose segments passed, dropped whole
    /// (their segments counted in `dropped`/`queue_drops` as usual).
    pub dropped_units: u64,
    /// A moving path (moving.rs): data segments its policer dropped, and
    /// packets that arrived before one sent earlier (jitter with reordering).
    pub policer_drops: u64,
    pub reordered: u64,
}

impl QueueStats {
    /// Forgets the timing histograms gathered so far (SIGUSR1: lateness is
    /// measured from the end of the warm-up); the counters stay.
    pub fn forget_timings(&mut self) {
        self.late = LateHist::default();
        self.read_wait = LateHist::default();
        self.verdict_call = LateHist::default();
        self.read_gap = LateHist::default();
    }

    pub fn to_json(&self, name: &str, num: u16, delay_ns: u64, loss: f64) -> String {
        format!(
            concat!(
                "{{\"name\":\"{}\",\"num\":{},\"delay_s\":{},\"loss\":{},",
                "\"packets\":{},\"bytes\":{},\"data_packets\":{},\"dropped\":{},\"queue_drops\":{},\"bottleneck_bytes\":{},\"ce_marks\":{},\"ce_unmarkable\":{},",
                "\"gso_packets\":{},\"max_packet_bytes\":{},\"held_max\":{},",
                "\"timestamps_seen\":{},\"late_p50_s\":{:e},\"late_p99_s\":{:e},\"late_max_s\":{:e},",
                "\"verdict_batches\":{},\"read_wait_p99_s\":{:e},\"read_wait_max_s\":{:e},\"read_gap_p99_s\":{:e},\"read_gap_max_s\":{:e},\"verdict_call_p99_s\":{:e},\"verdict_call_max_s\":{:e},",
                "\"units\":{},\"unit_segments\":{},\"split_units\":{},\"unit_mismatches\":{},\"dropped_units\":{},",
                "\"policer_drops\":{},\"reordered\":{}}}"
            ),
            name,
            num,
            delay_ns as f64 * 1e-9,
            loss,
            self.packets,
            self.bytes,
            self.data_packets,
            self.dropped,
            self.queue_drops,
            self.bottleneck_bytes,
            self.ce_marks,
            self.ce_unmarkable,
            self.gso_packets,
            self.max_packet_bytes,
            self.held_max,
            self.timestamps_seen,
            self.late.quantile_s(0.5),
            self.late.quantile_s(0.99),
            self.late.max_s(),
            self.verdict_batches,
            self.read_wait.quantile_s(0.99),
            self.read_wait.max_s(),
            self.read_gap.quantile_s(0.99),
            self.read_gap.max_s(),
            self.verdict_call.quantile_s(0.99),
            self.verdict_call.max_s(),
            self.units,
            self.unit_segments,
            self.split_units,
            self.unit_mismatches,
            self.dropped_units,
            self.policer_drops,
            self.reordered,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_uniform_lateness() {
        let mut h = LateHist::default();
        for us in 0..1000u64 {
            h.record(us * 1000 + 500, 1);
        }
        assert!((h.quantile_s(0.5) - 500e-6).abs() < 2e-6);
        assert!((h.quantile_s(0.99) - 990e-6).abs() < 2e-6);
        assert!((h.max_s() - 999.5e-6).abs() < 1e-9);
    }

    #[test]
    fn overflow_bucket_reports_max() {
        let mut h = LateHist::default();
        h.record(5_000_000_000, 1);
        assert_eq!(h.quantile_s(0.99), 5.0);
    }
}
