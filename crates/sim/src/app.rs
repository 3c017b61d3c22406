//! Applications on top of a stream. Bulk senders need no state (their
//! sender always has data). RPC streams run request/response exchanges on
//! one persistent connection: the client (receiver side) sends a request,
//! which reaches the server after the reverse-path delay; the server writes
//! the response, which the sender carries through the bottleneck; the RPC
//! completes when its last response segment has arrived in order.
//!
//! Simplifications: requests are not queued or lost on the reverse path
//! (they take its constant delay), and responses occupy whole segments
//! (response_bytes rounded up to a multiple of the MSS).

use std::collections::VecDeque;

use crate::rng::Rng;
use crate::units::Time;

#[derive(Clone, Debug, PartialEq)]
pub enum RpcMode {
    /// Closed loop: this many RPCs outstanding at all times.
    Closed { concurrency: u32 },
    /// Open loop: Poisson arrivals at this rate per second.
    Open { rate_per_s: f64 },
}

#[derive(Clone, Debug, PartialEq)]
pub struct RpcSpec {
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub mode: RpcMode,
}

#[derive(Debug)]
pub struct RpcApp {
    pub spec: RpcSpec,
    response_segs: u64,
    rng: Rng,
    /// Issued, not yet complete: (issue time, response end segment).
    outstanding: VecDeque<(Time, u64)>,
    /// Requests on their way to the server (arrival times, FIFO).
    requests: VecDeque<Time>,
    /// End segment of the last response assigned.
    assigned_end: u64,
}

impl RpcApp {
    pub fn new(spec: RpcSpec, mss: u32, rng: Rng) -> RpcApp {
        let response_segs = spec.response_bytes.div_ceil(mss.max(1) as u64).max(1);
        RpcApp { spec, response_segs, rng, outstanding: VecDeque::new(), requests: VecDeque::new(), assigned_end: 0 }
    }

    /// The client issues a request at `now`; returns when it reaches the
    /// server. Responses are written in request order, so the response's
    /// segment range is known now.
    pub fn issue(&mut self, now: Time, request_delay: Time) -> Time {
        self.assigned_end += self.response_segs;
        self.outstanding.push_back((now, self.assigned_end));
        let at = now + request_delay;
        self.requests.push_back(at);
        at
    }

    /// A request reached the server: the number of segments to write.
    pub fn on_request(&mut self) -> u64 {
        self.requests.pop_front();
        self.response_segs
    }

    /// Pops the next RPC completed once `rcv_nxt` segments arrived in
    /// order; returns its issue time.
    pub fn pop_completed(&mut self, rcv_nxt: u64) -> Option<Time> {
        match self.outstanding.front() {
            Some(&(t, end)) if rcv_nxt >= end => {
                self.outstanding.pop_front();
                Some(t)
            }
            _ => None,
        }
    }

    /// Gap to the next open-loop arrival (exponential), if open loop.
    pub fn next_gap(&mut self) -> Option<Time> {
        match self.spec.mode {
            RpcMode::Open { rate_per_s } if rate_per_s > 0.0 => {
                Some(Time::from_secs_f64(self.rng.exponential(1.0 / rate_per_s)).max(Time(1)))
            }
            _ => None,
        }
    }

    /// RPCs outstanding (for memory-bound checks).
    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_complete_in_request_order_when_their_last_segment_arrives() {
        let spec = RpcSpec { request_bytes: 100, response_bytes: 3000, mode: RpcMode::Closed { concurrency: 2 } };
        let mut app = RpcApp::new(spec, 1448, Rng::new(1, 1));
        app.issue(Time(0), Time(10));
        app.issue(Time(5), Time(10));
        assert_eq!(app.on_request(), 3); // 3000 B = 3 segments of 1448
        assert_eq!(app.pop_completed(2), None);
        assert_eq!(app.pop_completed(3), Some(Time(0)));
        assert_eq!(app.pop_completed(5), None);
        assert_eq!(app.pop_completed(6), Some(Time(5)));
    }
}
