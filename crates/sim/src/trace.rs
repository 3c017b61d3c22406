//! Output tables: per-stream samples (the series), per-RPC rows, per-interval
//! samples of the bottleneck (the path series), the CCAs' state changes
//! (the events), path facts and run statistics. Column-oriented so the
//! binding can hand each column to Python as one list.
//!
//! Each table's columns are listed once, in a `series_table!` or
//! `facts_struct!` invocation below (the CCA-variable columns the series
//! and the events share, once in `with_cc_var_columns!`), with their Rust
//! type, unit and meaning;
//! the macros generate the structs, the row push, the column-name list and
//! a typed column iterator that `to_json` and the PyO3 binding walk. The
//! Python side of the same schema is python/fatpipe/schema.py; a test
//! (tests/test_schema.py) fails if the two differ.

/// A column's values, typed, in the table's column order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Column<'a> {
    Int(&'a [i64]),
    Float(&'a [f64]),
    Str(&'a [&'static str]),
    /// A nullable column (the `cc_*` columns: `None` where the stream's
    /// CCA has no such variable).
    OptInt(&'a [Option<i64>]),
    OptFloat(&'a [Option<f64>]),
    OptStr(&'a [Option<&'static str>]),
    OptBool(&'a [Option<bool>]),
}

impl Column<'_> {
    pub fn to_json(self) -> serde_json::Value {
        match self {
            Column::Int(v) => serde_json::json!(v),
            Column::Float(v) => serde_json::json!(v),
            Column::Str(v) => serde_json::json!(v),
            Column::OptInt(v) => serde_json::json!(v),
            Column::OptFloat(v) => serde_json::json!(v),
            Column::OptStr(v) => serde_json::json!(v),
            Column::OptBool(v) => serde_json::json!(v),
        }
    }
}

/// One path fact's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fact {
    Int(u64),
    Float(Option<f64>),
    Str(&'static str),
}

impl Fact {
    pub fn to_json(self) -> serde_json::Value {
        match self {
            Fact::Int(v) => serde_json::json!(v),
            Fact::Float(v) => serde_json::json!(v),
            Fact::Str(v) => serde_json::json!(v),
        }
    }
}

/// A Rust type a table column or fact may have, with the kind Python's
/// schema names it by ("int", "float", "float | None", "str").
pub trait SchemaType: Sized {
    const KIND: &'static str;
}

/// A type a series column may hold.
pub trait ColumnType: SchemaType {
    fn column(v: &[Self]) -> Column<'_>;
}

/// A type a path fact may have.
pub trait FactType: SchemaType + Copy {
    fn fact(self) -> Fact;
}

impl SchemaType for i64 {
    const KIND: &'static str = "int";
}
impl SchemaType for f64 {
    const KIND: &'static str = "float";
}
impl SchemaType for &'static str {
    const KIND: &'static str = "str";
}
impl SchemaType for u64 {
    const KIND: &'static str = "int";
}
impl SchemaType for Option<f64> {
    const KIND: &'static str = "float | None";
}
impl SchemaType for Option<i64> {
    const KIND: &'static str = "int | None";
}
impl SchemaType for Option<&'static str> {
    const KIND: &'static str = "str | None";
}
impl SchemaType for Option<bool> {
    const KIND: &'static str = "bool | None";
}
impl ColumnType for Option<i64> {
    fn column(v: &[Self]) -> Column<'_> {
        Column::OptInt(v)
    }
}
impl ColumnType for Option<f64> {
    fn column(v: &[Self]) -> Column<'_> {
        Column::OptFloat(v)
    }
}
impl ColumnType for Option<&'static str> {
    fn column(v: &[Self]) -> Column<'_> {
        Column::OptStr(v)
    }
}
impl ColumnType for Option<bool> {
    fn column(v: &[Self]) -> Column<'_> {
        Column::OptBool(v)
    }
}
impl ColumnType for i64 {
    fn column(v: &[i64]) -> Column<'_> {
        Column::Int(v)
    }
}
impl ColumnType for f64 {
    fn column(v: &[f64]) -> Column<'_> {
        Column::Float(v)
    }
}
impl ColumnType for &'static str {
    fn column(v: &[Self]) -> Column<'_> {
        Column::Str(v)
    }
}
impl FactType for u64 {
    fn fact(self) -> Fact {
        Fact::Int(self)
    }
}
impl FactType for Option<f64> {
    fn fact(self) -> Fact {
        Fact::Float(self)
    }
}
impl FactType for &'static str {
    fn fact(self) -> Fact {
        Fact::Str(self)
    }
}

/// The definition of one column or fact: name, Python kind, unit, meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldDef {
    pub name: &'static str,
    pub kind: &'static str,
    /// "s", "bytes", "bit/s", "segments", "rounds", or "" for identifiers,
    /// labels and ratios.
    pub unit: &'static str,
    pub doc: &'static str,
}

/// Defines a column-oriented table from one list of
/// `name: Type, "unit", "meaning";` lines: the table struct (one `Vec` per
/// column), the row struct, `push`, `columns()` (typed, in order),
/// the `FieldDef` list and the list of column names.
macro_rules! series_table {
    (
        $(#[$tmeta:meta])* table $table:ident;
        $(#[$rmeta:meta])* row $row:ident;
        $(#[$dmeta:meta])* defs $defs:ident;
        $(#[$nmeta:meta])* names $names:ident;
        $( $name:ident : $ty:ty $(= $field:ident)?, $unit:literal, $doc:literal; )+
    ) => {
        $(#[$nmeta])*
        pub const $names: &[&str] = &[ $( stringify!($name), )+ ];

        $(#[$tmeta])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $table {
            $( #[doc = $doc] pub $name: Vec<$ty>, )+
        }

        $(#[$rmeta])*
        #[derive(Clone, Debug, Default)]
        pub struct $row {
            $( #[doc = $doc] pub $name: $ty, )+
        }

        $(#[$dmeta])*
        pub const $defs: &[FieldDef] = &[
            $( FieldDef { name: stringify!($name), kind: <$ty as SchemaType>::KIND, unit: $unit, doc: $doc }, )+
        ];

        impl $table {
            /// Appends one row.
            #[inline]
            pub fn push(&mut self, r: $row) {
                $( self.$name.push(r.$name); )+
            }

            /// The columns in definition order, typed.
            pub fn columns(&self) -> impl Iterator<Item = (&'static str, Column<'_>)> + '_ {
                [ $( (stringify!($name), <$ty as ColumnType>::column(&self.$name)), )+ ].into_iter()
            }
        }
    };
}

/// Defines a struct of scalar facts from one list of
/// `name: Type, "unit", "meaning";` lines: the struct, `facts()` (typed, in
/// order) and the `FieldDef` list.
macro_rules! facts_struct {
    (
        $(#[$smeta:meta])* struct $name_s:ident;
        $(#[$dmeta:meta])* defs $defs:ident;
        $( $name:ident : $ty:ty, $unit:literal, $doc:literal; )+
    ) => {
        $(#[$smeta])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name_s {
            $( #[doc = $doc] pub $name: $ty, )+
        }

        $(#[$dmeta])*
        pub const $defs: &[FieldDef] = &[
            $( FieldDef { name: stringify!($name), kind: <$ty as SchemaType>::KIND, unit: $unit, doc: $doc }, )+
        ];

        impl $name_s {
            /// The facts in definition order, typed.
            pub fn facts(&self) -> impl Iterator<Item = (&'static str, Fact)> + '_ {
                [ $( (stringify!($name), <$ty as FactType>::fact(self.$name)), )+ ].into_iter()
            }
        }
    };
}

/// The columns of a CCA's internal variables (cc::CcVars), shared by the
/// series and the events table: `with_cc_var_columns!(m! { head })` invokes
/// `m! { head <the columns> }`, each column as `name: Type = CcVars field,
/// "unit", "meaning";`. Null where the stream's CCA has no such variable.
macro_rules! with_cc_var_columns {
    ($m:ident! { $($head:tt)* }) => {
        $m! { $($head)*
            cc_state: Option<&'static str> = state, "", "the CCA's state (CcVars::state: BBR's startup, drain, probe_bw (v1) or probe_bw_up/down/cruise/refill (bbr3), probe_rtt); null for a CCA that exposes no variables";
            cc_cycle_index: Option<i64> = cycle_index, "", "PROBE_BW's cycle index (bbr->cycle_idx: v1 0-7 of its gain cycle; bbr3 UP 0, DOWN 1, CRUISE 2, REFILL 3)";
            cc_round: Option<i64> = round, "rounds", "packet-timed round trips so far (v1's rtt_cnt; bbr3's round starts counted)";
            cc_max_bw_bps: Option<f64> = max_bw_bps, "bit/s", "bbr_max_bw(): windowed max delivery rate of payload";
            cc_min_rtt_s: Option<f64> = min_rtt_s, "s", "the CCA's windowed min RTT (bbr->min_rtt_us); null before a sample";
            cc_pacing_gain: Option<f64> = pacing_gain, "", "current pacing gain (bbr->pacing_gain / 256)";
            cc_cwnd_gain: Option<f64> = cwnd_gain, "", "current cwnd gain (bbr->cwnd_gain / 256)";
            cc_full_bw_bps: Option<f64> = full_bw_bps, "bit/s", "the bandwidth STARTUP's plateau check compares with (bbr->full_bw)";
            cc_full_bw_count: Option<i64> = full_bw_count, "rounds", "rounds without 25 % bandwidth growth (bbr->full_bw_cnt)";
            cc_full_bw_reached: Option<bool> = full_bw_reached, "", "STARTUP has filled the pipe (bbr->full_bw_reached)";
            cc_inflight_hi_segments: Option<i64> = inflight_hi_segments, "segments", "bbr3's inflight_hi (the draft's inflight_longterm); null while unset and for v1";
            cc_inflight_lo_segments: Option<i64> = inflight_lo_segments, "segments", "bbr3's inflight_lo (inflight_shortterm); null while unset and for v1";
            cc_bw_hi_bps: Option<f64> = bw_hi_bps, "bit/s", "bbr3's bw_hi of the current cycle (bw_hi[1]); null for v1";
            cc_bw_lo_bps: Option<f64> = bw_lo_bps, "bit/s", "bbr3's bw_lo (bw_shortterm); null while unset and for v1";
            cc_extra_acked_segments: Option<i64> = extra_acked_segments, "segments", "bbr_extra_acked(): the ACK-aggregation estimate";
            cc_bdp_segments: Option<i64> = bdp_segments, "segments", "bbr_inflight(max_bw, 1.0): the BDP plus the quantization budget (the draft's BBRInflight(1.0)), what DRAIN's exit compares the flight with";
            cc_full_bw_now: Option<bool> = full_bw_now, "", "bbr3's full_bw_now: the plateau rule fired in this STARTUP or probe; null for v1";
            cc_bw_probe_up_rounds: Option<i64> = bw_probe_up_rounds, "", "bbr3's bw_probe_up_rounds: PROBE_UP raises inflight_hi by 1 << this many segments per round; null for v1";
            cc_prev_probe_too_high: Option<bool> = prev_probe_too_high, "", "bbr3's prev_probe_too_high: the last probe ended on loss or ECN; null for v1";
            cc_undo_bw_lo_bps: Option<f64> = undo_bw_lo_bps, "bit/s", "bbr3's undo_bw_lo, saved on entering recovery (0 before any); null while it holds no bound and for v1";
            cc_undo_inflight_lo_segments: Option<i64> = undo_inflight_lo_segments, "segments", "bbr3's undo_inflight_lo (0 before any recovery); null while it holds no bound and for v1";
            cc_undo_inflight_hi_segments: Option<i64> = undo_inflight_hi_segments, "segments", "bbr3's undo_inflight_hi (0 before any recovery); null while it holds no bound and for v1";
            cc_lt_bw_bps: Option<f64> = lt_bw_bps, "bit/s", "v1's lt_bw, the long-term (policed) rate (0 before one is measured); null for bbr3";
            cc_lt_use_bw: Option<bool> = lt_use_bw, "", "v1's lt_use_bw: the flow paces at lt_bw; null for bbr3";
            cc_loss_events_in_round: Option<i64> = loss_events_in_round, "", "bbr3's loss_events_in_round: ACKs with new losses in this loss round (STARTUP's loss exit needs 6); null for v1";
            cc_probe_rtt_min_stamp_s: Option<f64> = probe_rtt_min_stamp_s, "s", "when the PROBE_RTT timer last restarted (bbr3's probe_rtt_min_stamp, v1's min_rtt_stamp)";
            cc_idle_restart: Option<bool> = idle_restart, "", "bbr->idle_restart: transmission restarted after an app-limited idle (CA_EVENT_TX_START), until the next ACK's model update";
            cc_rs_delivery_rate_bps: Option<f64> = rs_delivery_rate_bps, "bit/s", "the last rate sample's delivery rate (delivered x MSS / interval); null while invalid";
            cc_rs_is_app_limited: Option<bool> = rs_is_app_limited, "", "the last rate sample's is_app_limited";
            cc_rs_tx_in_flight_segments: Option<i64> = rs_tx_in_flight_segments, "segments", "the last rate sample's tx_in_flight (in flight when its packet was sent)";
            cc_rs_lost_segments: Option<i64> = rs_lost_segments, "segments", "the last rate sample's lost (marked lost since its packet was sent)";
        }
    };
}

/// `impl $row { fn set_cc_vars }`: copies a CcVars snapshot into a row's
/// `cc_*` cells, from the column list of `with_cc_var_columns!`.
macro_rules! cc_var_setter {
    ($row:ident; $( $name:ident : $ty:ty = $field:ident, $unit:literal, $doc:literal; )+) => {
        impl $row {
            /// Fills the `cc_*` cells from `v` (left null when `None`).
            #[inline]
            pub fn set_cc_vars(&mut self, v: Option<&crate::cc::CcVars>) {
                if let Some(v) = v {
                    $( self.$name = v.$field.into(); )+
                }
            }
        }
    };
}

with_cc_var_columns!(series_table! {
    /// One column vector per series column: one row per stream per sampling
    /// interval. Counters marked cumulative count from the stream's start.
    table Series;
    /// One sample of one stream.
    row Row;
    /// The series columns (SERIES_COLUMNS of python/fatpipe/schema.py).
    defs SERIES_SCHEMA;
    /// Names of the series columns, in order.
    names SERIES_COLUMNS;
    flow_group: i64, "", "index into the plan's flow groups";
    stream: i64, "", "0 .. streams-1 within the group";
    t_s: f64, "s", "sample time since the run started";
    delivered_bytes: i64, "bytes", "cumulative payload bytes acked (tcpi_bytes_acked)";
    cwnd_segments: i64, "segments", "congestion window (tcpi_snd_cwnd)";
    srtt_s: f64, "s", "smoothed RTT (tcpi_rtt)";
    min_rtt_s: f64, "s", "smallest RTT seen (tcpi_min_rtt), 0 before the first sample";
    retrans_segments: i64, "segments", "cumulative retransmitted segments (tcpi_total_retrans)";
    segs_out: i64, "segments", "cumulative data segments sent incl. retransmissions (tcpi_data_segs_out)";
    pacing_rate_bps: f64, "bit/s", "pacing rate (tcpi_pacing_rate)";
    delivery_rate_bps: f64, "bit/s", "latest delivery-rate sample (tcpi_delivery_rate)";
    inflight_segments: i64, "segments", "segments in flight (tcp_packets_in_flight)";
    ca_state: &'static str, "", "Linux's tcpi_ca_state: open, disorder, cwr, recovery or loss";
    cc_mode: &'static str, "", "the CCA's own mode (e.g. BBR's startup/drain/probe_bw/probe_rtt, slow_start/cong_avoid), or empty";
    rwnd_limited_s: f64, "s", "cumulative time limited by the receive window (tcpi_rwnd_limited)";
    sndbuf_limited_s: f64, "s", "cumulative time limited by the send buffer (tcpi_sndbuf_limited)";
    busy_s: f64, "s", "cumulative time with data in flight (tcpi_busy_time)";
});
with_cc_var_columns!(cc_var_setter! { Row; });

impl Series {
    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }
}

series_table! {
    /// RPC_COLUMNS: one row per completed RPC.
    table Rpcs;
    /// One completed RPC.
    row RpcRow;
    /// The RPC columns (RPC_COLUMNS of python/fatpipe/schema.py).
    defs RPC_SCHEMA;
    /// Names of the RPC columns, in order.
    names RPC_COLUMNS;
    flow_group: i64, "", "index into the plan's flow groups";
    stream: i64, "", "0 .. streams-1 within the group";
    start_s: f64, "s", "when the request was issued";
    duration_s: f64, "s", "until the last response byte arrived";
    response_bytes: i64, "bytes", "response size";
}

series_table! {
    /// TRANSFER_COLUMNS: one row per completed data set (crate::transfer).
    table Transfers;
    /// One completed data set.
    row TransferRow;
    /// The transfer columns (TRANSFER_COLUMNS of python/fatpipe/schema.py).
    defs TRANSFER_SCHEMA;
    /// Names of the transfer columns, in order.
    names TRANSFER_COLUMNS;
    flow_group: i64, "", "index into the plan's flow groups";
    transfer: i64, "", "0 .. data sets-1 within the group, in order of start";
    start_s: f64, "s", "its planned start, since the run started";
    duration_s: f64, "s", "completion time: until the receiver had its last byte";
    size_bytes: i64, "bytes", "the data set's size";
}

series_table! {
    /// PATH_SERIES_COLUMNS: one row per sampling interval, the bottleneck's
    /// queue at the sample instant (as `tc -s qdisc show` reports a
    /// backlog) and its counters so far.
    table PathSeries;
    /// One sample of the bottleneck.
    row PathRow;
    /// The path series columns (PATH_SERIES_COLUMNS of python/fatpipe/schema.py).
    defs PATH_SERIES_SCHEMA;
    /// Names of the path series columns, in order.
    names PATH_SERIES_COLUMNS;
    t_s: f64, "s", "sample time since the run started";
    queue_bytes: i64, "bytes", "bytes queued at the bottleneck (frames, as its buffer counts them), including the packet being sent";
    queue_packets: i64, "packets", "packets queued at the bottleneck, including the packet being sent";
    queue_drops: i64, "packets", "cumulative packets dropped by the bottleneck (the path fact queue_drops so far)";
    ce_marks: i64, "packets", "cumulative packets the bottleneck marked CE (the path fact ce_marks so far)";
}

impl PathSeries {
    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }
}

with_cc_var_columns!(series_table! {
    /// EVENT_COLUMNS: one row per change in a stream's CCA state machine
    /// or loss-recovery event of its sender (tcp/cc_log.rs), recorded on
    /// the ACK (or timer, or transmit) that made it, with the
    /// CCA's variables right after it. Only streams whose CCA exposes
    /// variables (CongestionControl::vars) have events.
    table Events;
    /// One event.
    row EventRow;
    /// The events columns (EVENT_COLUMNS of python/fatpipe/schema.py).
    defs EVENT_SCHEMA;
    /// Names of the events columns, in order.
    names EVENT_COLUMNS;
    t_s: f64, "s", "when the change happened, since the run started";
    flow_group: i64, "", "index into the plan's flow groups";
    stream: i64, "", "0 .. streams-1 within the group";
    kind: &'static str, "", "cc_state (the state changed), cc_cycle (v1's PROBE_BW cycle phase changed, state unchanged), full_bw_reached (became true), or the sender's recovery_start (fast recovery began), loss_start (an RTO: TCP_CA_Loss), undo (a reduction undone as spurious) or restart_from_idle (sending restarted after an app-limited idle and the CCA set idle_restart)";
    from_state: &'static str, "", "the CCA's state before (cc_state's value)";
    to_state: &'static str, "", "the CCA's state after";
    cwnd_segments: i64, "segments", "the sender's cwnd right after the change (tp->snd_cwnd)";
    inflight_segments: i64, "segments", "packets in flight right after the change (tcp_packets_in_flight())";
});
with_cc_var_columns!(cc_var_setter! { EventRow; });

impl Events {
    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }
}

facts_struct! {
    /// What the path really did during the run (PathReport of
    /// python/fatpipe/schema.py).
    struct PathFacts;
    /// The path facts (PATH_FACTS of python/fatpipe/schema.py).
    defs PATH_SCHEMA;
    emulator: &'static str, "", "what emulated the path: sim, netem, linkem-nfqueue, ...";
    min_rtt_s: Option<f64>, "s", "smallest RTT any stream observed";
    packets: u64, "packets", "data packets offered to the loss stage";
    random_drops: u64, "packets", "packets dropped by the configured loss/corruption and at chosen instants (path.drops)";
    queue_drops: u64, "packets", "packets dropped by the bottleneck (buffer overflow; with fq_codel, CoDel and its packet limit)";
    ce_marks: u64, "packets", "ECN-capable packets the bottleneck marked CE (0 without a marking discipline)";
    bottleneck_bps: Option<f64>, "bit/s", "bytes through the bottleneck over the whole run (mean throughput, all flows)";
    late_p99_s: Option<f64>, "s", "delay-line lateness, 99th percentile (None without a delay line)";
    late_max_s: Option<f64>, "s", "delay-line lateness, largest (None without a delay line)";
    clock_uncertainty_s: Option<f64>, "s", "how far a host's clock may have been off the controller's during the run (None: one clock)";
    host_drops: u64, "packets", "packets lost outside the emulated path where fatpipe can count them (kernel: ACKs a full veth NAPI ring dropped); a run with any is flagged host_drops";
    policer_drops: u64, "packets", "data packets the path's policer dropped for exceeding its rate and burst (path.policer)";
    reordered: u64, "packets", "packets (data and ACKs) that arrived before one sent earlier on the same path (path.jitter with reordering, path.reorder)";
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

/// One machine of the hosts' CPU model (crate::host::cpu): which hosts
/// ran on it and how busy each core was over the measured interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MachineCpu {
    pub label: String,
    pub hosts: Vec<String>,
    /// Per core: CPU time spent over the measured interval, as a fraction
    /// of it (after the warm-up, as the kernel backend reads /proc/stat).
    pub busy_frac: Vec<f64>,
}

/// Everything a run produces.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResult {
    pub series: Series,
    pub rpcs: Rpcs,
    /// The data sets of transfer groups that completed.
    pub transfers: Transfers,
    pub path_series: PathSeries,
    /// The CCAs' state changes (empty when no stream's CCA exposes
    /// variables).
    pub events: Events,
    pub path: PathFacts,
    pub stats: Stats,
    /// The machines of hosts with a CPU model (none on ideal hosts).
    pub host_cpu: Vec<MachineCpu>,
    /// Packet captures (crate::capture): (capture point, its sender host's
    /// index in the plan's sender order (0 at the receiver), pcap bytes,
    /// truncated at its size limit); empty without a capture.
    pub captures: Vec<(crate::capture::Side, u8, Vec<u8>, bool)>,
}

impl RunResult {
    /// The result as JSON: {"series": {col: [..]}, "rpcs": {..}, "transfers": {..},
    /// "path_series": {..}, "events": {..}, "path": {..}, "stats": {..}}.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let series: Map<String, Value> = self.series.columns().map(|(k, v)| (k.to_string(), v.to_json())).collect();
        let rpcs: Map<String, Value> = self.rpcs.columns().map(|(k, v)| (k.to_string(), v.to_json())).collect();
        let transfers: Map<String, Value> =
            self.transfers.columns().map(|(k, v)| (k.to_string(), v.to_json())).collect();
        let path_series: Map<String, Value> =
            self.path_series.columns().map(|(k, v)| (k.to_string(), v.to_json())).collect();
        let events: Map<String, Value> = self.events.columns().map(|(k, v)| (k.to_string(), v.to_json())).collect();
        let path: Map<String, Value> = self.path.facts().map(|(k, v)| (k.to_string(), v.to_json())).collect();
        json!({
            "series": Value::Object(series),
            "rpcs": Value::Object(rpcs),
            "transfers": Value::Object(transfers),
            "path_series": Value::Object(path_series),
            "events": Value::Object(events),
            "path": Value::Object(path),
            "stats": {"events": self.stats.events, "packets_sent": self.stats.packets_sent,
                      "max_pending_events": self.stats.max_pending_events},
            "host_cpu": self.host_cpu.iter().map(|m| json!({"label": m.label, "hosts": m.hosts, "busy_frac": m.busy_frac}))
                .collect::<Vec<_>>(),
        })
    }
}
