//! Output tables: per-stream samples (SERIES_COLUMNS of
//! python/fatpipe/backends/base.py), per-RPC rows (RPC_COLUMNS), path facts
//! (PathReport) and run statistics. Column-oriented so the binding can hand
//! each column to Python as one list.

/// One column vector per SERIES_COLUMNS entry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub flow_group: Vec<i64>,
    pub stream: Vec<i64>,
    pub t_s: Vec<f64>,
    pub delivered_bytes: Vec<i64>,
    pub cwnd_segments: Vec<i64>,
    pub srtt_s: Vec<f64>,
    pub min_rtt_s: Vec<f64>,
    pub retrans_segments: Vec<i64>,
    pub segs_out: Vec<i64>,
    pub pacing_rate_bps: Vec<f64>,
    pub delivery_rate_bps: Vec<f64>,
    pub inflight_segments: Vec<i64>,
    pub ca_state: Vec<&'static str>,
    pub rwnd_limited_s: Vec<f64>,
    pub sndbuf_limited_s: Vec<f64>,
    pub busy_s: Vec<f64>,
}

/// One sample of one stream.
#[derive(Clone, Debug, Default)]
pub struct Row {
    pub flow_group: i64,
    pub stream: i64,
    pub t_s: f64,
    pub delivered_bytes: i64,
    pub cwnd_segments: i64,
    pub srtt_s: f64,
    pub min_rtt_s: f64,
    pub retrans_segments: i64,
    pub segs_out: i64,
    pub pacing_rate_bps: f64,
    pub delivery_rate_bps: f64,
    pub inflight_segments: i64,
    pub ca_state: &'static str,
    pub rwnd_limited_s: f64,
    pub sndbuf_limited_s: f64,
    pub busy_s: f64,
}

impl Series {
    pub fn push(&mut self, r: Row) {
        self.flow_group.push(r.flow_group);
        self.stream.push(r.stream);
        self.t_s.push(r.t_s);
        self.delivered_bytes.push(r.delivered_bytes);
        self.cwnd_segments.push(r.cwnd_segments);
        self.srtt_s.push(r.srtt_s);
        self.min_rtt_s.push(r.min_rtt_s);
        self.retrans_segments.push(r.retrans_segments);
        self.segs_out.push(r.segs_out);
        self.pacing_rate_bps.push(r.pacing_rate_bps);
        self.delivery_rate_bps.push(r.delivery_rate_bps);
        self.inflight_segments.push(r.inflight_segments);
        self.ca_state.push(r.ca_state);
        self.rwnd_limited_s.push(r.rwnd_limited_s);
        self.sndbuf_limited_s.push(r.sndbuf_limited_s);
        self.busy_s.push(r.busy_s);
    }

    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }

    /// Columns in SERIES_COLUMNS order, as JSON values (used by tests,
    /// `to_json` and the binding).
    pub fn columns(&self) -> Vec<(&'static str, serde_json::Value)> {
        use serde_json::json;
        vec![
            ("flow_group", json!(self.flow_group)),
            ("stream", json!(self.stream)),
            ("t_s", json!(self.t_s)),
            ("delivered_bytes", json!(self.delivered_bytes)),
            ("cwnd_segments", json!(self.cwnd_segments)),
            ("srtt_s", json!(self.srtt_s)),
            ("min_rtt_s", json!(self.min_rtt_s)),
            ("retrans_segments", json!(self.retrans_segments)),
            ("segs_out", json!(self.segs_out)),
            ("pacing_rate_bps", json!(self.pacing_rate_bps)),
            ("delivery_rate_bps", json!(self.delivery_rate_bps)),
            ("inflight_segments", json!(self.inflight_segments)),
            ("ca_state", json!(self.ca_state)),
            ("rwnd_limited_s", json!(self.rwnd_limited_s)),
            ("sndbuf_limited_s", json!(self.sndbuf_limited_s)),
            ("busy_s", json!(self.busy_s)),
        ]
    }
}

/// RPC_COLUMNS: one row per completed RPC.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rpcs {
    pub flow_group: Vec<i64>,
    pub stream: Vec<i64>,
    pub start_s: Vec<f64>,
    pub duration_s: Vec<f64>,
    pub response_bytes: Vec<i64>,
}

impl Rpcs {
    pub fn columns(&self) -> Vec<(&'static str, serde_json::Value)> {
        use serde_json::json;
        vec![
            ("flow_group", json!(self.flow_group)),
            ("stream", json!(self.stream)),
            ("start_s", json!(self.start_s)),
            ("duration_s", json!(self.duration_s)),
            ("response_bytes", json!(self.response_bytes)),
        ]
    }
}

/// PathReport of base.py.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PathFacts {
    pub min_rtt_s: Option<f64>,
    pub packets: u64,
    pub random_drops: u64,
    pub queue_drops: u64,
    pub bottleneck_bps: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Events popped from the event queue.
    pub events: u64,
    /// Data segments transmitted (including retransmissions).
    pub packets_sent: u64,
    /// Largest number of events pending at once.
    pub max_pending_events: u64,
}

/// Everything a run produces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResult {
    pub series: Series,
    pub rpcs: Rpcs,
    pub path: PathFacts,
    pub stats: Stats,
}

impl RunResult {
    /// The result as JSON: {"series": {col: [..]}, "rpcs": {..}, "path": {..},
    /// "stats": {..}}.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let mut series = Map::new();
        for (k, v) in self.series.columns() {
            series.insert(k.to_string(), v);
        }
        let mut rpcs = Map::new();
        for (k, v) in self.rpcs.columns() {
            rpcs.insert(k.to_string(), v);
        }
        json!({
            "series": Value::Object(series),
            "rpcs": Value::Object(rpcs),
            "path": {
                "emulator": "sim",
                "min_rtt_s": self.path.min_rtt_s,
                "packets": self.path.packets,
                "random_drops": self.path.random_drops,
                "queue_drops": self.path.queue_drops,
                "bottleneck_bps": self.path.bottleneck_bps,
            },
            "stats": {"events": self.stats.events, "packets_sent": self.stats.packets_sent,
                      "max_pending_events": self.stats.max_pending_events},
        })
    }
}
