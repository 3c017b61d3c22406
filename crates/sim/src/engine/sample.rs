//! The engine's recording: one series row per started stream and one
//! path-series row per sampling interval, and at the end the streams'
//! logs of their CCAs' state changes as the events table.

use crate::event::Event;
use crate::trace::{EventRow, Events, PathRow, Row};
use crate::units::Time;

use super::Sim;

impl Sim {
    /// Records one row per started stream from its sender's tcp_info, as
    /// the kernel backend samples TCP_INFO, and its CCA's variables
    /// (`cc_*`, null for a CCA that exposes none), and one row of the bottleneck
    /// (its queue now and its counters so far; a walk of the FIFO, once
    /// per interval, off the per-packet path).
    pub(super) fn on_sample(&mut self, now: Time) {
        if self.cpu_at_warmup.is_none() && now >= self.warmup {
            self.cpu_at_warmup = Some((now, self.net.machines.busy()));
        }
        let t_s = now.as_secs_f64();
        // Cross traffic due by now takes its place in the queue first.
        self.net.advance_cross(now);
        for st in &mut self.streams {
            if !st.started {
                continue;
            }
            let info = st.sender.tcp_info(now);
            let mut row = Row {
                flow_group: st.group as i64,
                stream: st.index as i64,
                t_s,
                delivered_bytes: info.bytes_acked.get() as i64,
                cwnd_segments: info.snd_cwnd as i64,
                srtt_s: info.rtt.as_secs_f64(),
                min_rtt_s: info.min_rtt.map_or(0.0, Time::as_secs_f64),
                retrans_segments: info.total_retrans as i64,
                segs_out: info.data_segs_out as i64,
                pacing_rate_bps: info.pacing_rate.bps() as f64,
                delivery_rate_bps: info.delivery_rate_bps,
                inflight_segments: info.packets_in_flight() as i64,
                ca_state: info.ca_state_name(),
                cc_mode: info.cc_mode,
                rwnd_limited_s: info.rwnd_limited.as_secs_f64(),
                sndbuf_limited_s: info.sndbuf_limited.as_secs_f64(),
                busy_s: info.busy_time.as_secs_f64(),
                ..Row::default()
            };
            row.set_cc_vars(st.sender.cc_vars().as_ref());
            self.result.series.push(row);
        }
        self.cross_rows(now);
        let (queue_packets, queue_bytes) = self.net.queue_at(now);
        let (queue_drops, ce_marks) = self.net.queue_counters();
        self.result.path_series.push(PathRow {
            t_s,
            queue_bytes: queue_bytes as i64,
            queue_packets: queue_packets as i64,
            queue_drops: queue_drops as i64,
            ce_marks: ce_marks as i64,
        });
        self.next_sample += 1;
        let next = self.sample_interval.mul(self.next_sample);
        if next <= self.end {
            self.net.events.push(next, Event::Sample);
        }
    }

    /// The events table: every stream's logged CCA state changes
    /// (tcp/cc_log.rs), in time order (streams in order at one instant).
    pub(super) fn cc_events(&self) -> Events {
        // Order (time, stream, logged order) by keys, then build each row
        // once: rows are large (every cc_* column), and a many-flow run
        // logs hundreds of thousands.
        let mut order: Vec<(Time, u32, u32)> = Vec::new();
        for (i, st) in self.streams.iter().enumerate() {
            order.extend(st.sender.cc_events().iter().enumerate().map(|(k, e)| (e.at, i as u32, k as u32)));
        }
        order.sort();
        let mut events = Events::default();
        for (_, i, k) in order {
            let st = &self.streams[i as usize];
            let e = &st.sender.cc_events()[k as usize];
            let mut row = EventRow {
                t_s: e.at.as_secs_f64(),
                flow_group: st.group as i64,
                stream: st.index as i64,
                kind: e.kind,
                from_state: e.from_state,
                to_state: e.vars.state,
                cwnd_segments: e.cwnd_segments as i64,
                inflight_segments: e.inflight_segments as i64,
                ..EventRow::default()
            };
            row.set_cc_vars(Some(&e.vars));
            events.push(row);
        }
        events
    }
}
