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
//!
//! The engine drives an application through [`App::on_timer`] (its
//! [`AppTimer`]s) and [`App::on_data`] (data arrived at the receiver), and
//! gives it the stream through [`AppEnv`].

use std::collections::VecDeque;

use crate::app_rate::RateBulk;
use crate::transfer::TransferApp;
use crate::event::AppTimer;
use crate::rng::Rng;
use crate::units::Time;

/// What an application needs from its stream and the engine.
pub trait AppEnv {
    /// Push an event for application timer `timer` at `at`.
    fn schedule(&mut self, at: Time, timer: AppTimer);
    /// The connection is established: the sender starts (Sender::start).
    fn start(&mut self, now: Time);
    /// The server application writes `segs` segments (tcp_sendmsg);
    /// u64::MAX: from now on it always has data.
    fn write(&mut self, now: Time, segs: u64);
    /// Segments a write can queue before it blocks on the send buffer.
    fn send_buffer_room(&self) -> u64;
    /// An application that always had data stops writing: what the send
    /// buffer holds is what it wrote (app_rate.rs).
    fn stop_writing(&mut self);
    /// The reverse path's delay a request takes to reach the server.
    fn send_request_delay(&self) -> Time;
    /// The client sends a request at `now`: a pending delayed ACK rides on
    /// it (the receiver's piggybacked ACK).
    fn piggyback(&mut self, now: Time);
    /// Segments the client has received in order (rcv_nxt).
    fn rcv_nxt(&self) -> u64;
    /// An RPC issued at `start` completed at `now`.
    fn rpc_done(&mut self, start: Time, now: Time, response_bytes: u64);
    /// Stream `slot` of data set `id` takes its next piece (segments; 0:
    /// nothing left) (transfer.rs Ledger::take).
    fn take_piece(&mut self, id: u32, slot: u32) -> u64;
    /// `segs` more segments of data set `id` arrived in order at `now`.
    fn transfer_delivered(&mut self, id: u32, segs: u64, now: Time);
}

/// The application of one stream.
#[derive(Debug)]
pub enum App {
    /// A bulk sender: always has data, needs nothing after the start.
    Bulk,
    /// Request/response exchanges.
    Rpc(RpcApp),
    /// A bulk sender whose writes follow a limited rate (app_rate.rs).
    RateBulk(RateBulk),
    /// One stream of a data set of a given size (transfer.rs).
    Transfer(TransferApp),
}

impl App {
    /// Segments the application has written before the start: a bulk
    /// sender always has data; an RPC server writes only on requests.
    pub fn initial_write_seq(&self) -> u64 {
        match self {
            App::Bulk => u64::MAX,
            App::Rpc(_) => 0,
            App::RateBulk(w) => w.initial_write_seq(),
            App::Transfer(_) => 0,
        }
    }

    /// Whether the application reads what arrives (App::on_data does
    /// something): RPC clients and transfers.
    #[inline]
    pub fn reads_data(&self) -> bool {
        matches!(self, App::Rpc(_) | App::Transfer(_))
    }

    /// An application timer fired at `now`.
    pub fn on_timer<E: AppEnv>(&mut self, timer: AppTimer, now: Time, env: &mut E) {
        match timer {
            AppTimer::Start => {
                env.start(now);
                match self {
                    App::Rpc(rpc) => rpc.start(now, env),
                    App::RateBulk(w) => w.on_tick(now, env),
                    App::Transfer(t) => t.on_start(now, env),
                    App::Bulk => {}
                }
            }
            AppTimer::Write => match self {
                App::RateBulk(w) => w.on_write_timer(now, env),
                App::Transfer(t) => t.on_tick(now, env),
                App::Bulk | App::Rpc(_) => {}
            },
            AppTimer::RpcIssue => {
                if let App::Rpc(rpc) = self {
                    rpc.issue_open_loop(now, env);
                }
            }
            AppTimer::RpcRequest => {
                if let App::Rpc(rpc) = self {
                    let segs = rpc.on_request();
                    env.write(now, segs);
                }
            }
        }
    }

    /// Data arrived at the receiver at `now`.
    #[inline]
    pub fn on_data<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        match self {
            App::Rpc(rpc) => rpc.completions(now, env),
            App::Transfer(t) => t.on_data(now, env),
            App::Bulk | App::RateBulk(_) => {}
        }
    }
}

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
    /// End of the run: open-loop arrivals after it are not scheduled.
    end: Time,
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
    /// An RPC application on a stream of `mss`-byte segments, in a run
    /// that ends at `end`.
    pub fn new(spec: RpcSpec, mss: u32, rng: Rng, end: Time) -> RpcApp {
        let response_segs = spec.response_bytes.div_ceil(mss.max(1) as u64).max(1);
        RpcApp {
            spec,
            end,
            response_segs,
            rng,
            outstanding: VecDeque::new(),
            requests: VecDeque::new(),
            assigned_end: 0,
        }
    }

    /// The connection is up: a closed loop issues `concurrency` requests at
    /// once, an open loop schedules its first arrival.
    fn start<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        match self.spec.mode {
            RpcMode::Closed { concurrency } => {
                for _ in 0..concurrency {
                    self.send_request(now, env);
                }
            }
            RpcMode::Open { .. } => {
                if let Some(gap) = self.next_gap() {
                    env.schedule(now + gap, AppTimer::RpcIssue);
                }
            }
        }
    }

    /// An open-loop arrival: issue a request and schedule the next arrival
    /// if it falls within the run.
    fn issue_open_loop<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        self.send_request(now, env);
        if let Some(gap) = self.next_gap() {
            if now + gap <= self.end {
                env.schedule(now + gap, AppTimer::RpcIssue);
            }
        }
    }

    /// The client issues one request at `now`; it reaches the server after
    /// the reverse path's delay.
    fn send_request<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        let delay = env.send_request_delay();
        let at = self.issue(now, delay);
        env.schedule(at, AppTimer::RpcRequest);
        env.piggyback(now);
    }

    /// Records the RPCs whose responses are complete; a closed loop issues
    /// the next request at once.
    fn completions<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        let closed = matches!(self.spec.mode, RpcMode::Closed { .. });
        while let Some(t0) = self.pop_completed(env.rcv_nxt()) {
            env.rpc_done(t0, now, self.spec.response_bytes);
            if closed {
                self.send_request(now, env);
            }
        }
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
        let mut app = RpcApp::new(spec, 1448, Rng::new(1, 1), Time::MAX);
        app.issue(Time(0), Time(10));
        app.issue(Time(5), Time(10));
        assert_eq!(app.on_request(), 3); // 3000 B = 3 segments of 1448
        assert_eq!(app.pop_completed(2), None);
        assert_eq!(app.pop_completed(3), Some(Time(0)));
        assert_eq!(app.pop_completed(5), None);
        assert_eq!(app.pop_completed(6), Some(Time(5)));
    }

    /// A hand-driven stream: records what the application asks for.
    #[derive(Default)]
    struct Fake {
        timers: Vec<(Time, AppTimer)>,
        started: Option<Time>,
        writes: Vec<u64>,
        piggybacks: u32,
        rcv_nxt: u64,
        done: Vec<(Time, Time, u64)>,
    }

    impl AppEnv for Fake {
        fn schedule(&mut self, at: Time, timer: AppTimer) {
            self.timers.push((at, timer));
        }
        fn start(&mut self, now: Time) {
            self.started = Some(now);
        }
        fn write(&mut self, _now: Time, segs: u64) {
            self.writes.push(segs);
        }
        fn send_buffer_room(&self) -> u64 {
            0
        }
        fn stop_writing(&mut self) {}
        fn send_request_delay(&self) -> Time {
            Time(10)
        }
        fn piggyback(&mut self, _now: Time) {
            self.piggybacks += 1;
        }
        fn rcv_nxt(&self) -> u64 {
            self.rcv_nxt
        }
        fn take_piece(&mut self, _id: u32, _slot: u32) -> u64 {
            0
        }
        fn transfer_delivered(&mut self, _id: u32, _segs: u64, _now: Time) {}
        fn rpc_done(&mut self, start: Time, now: Time, response_bytes: u64) {
            self.done.push((start, now, response_bytes));
        }
    }

    #[test]
    fn a_closed_loop_issues_concurrency_requests_at_start_and_one_per_completion() {
        let spec = RpcSpec { request_bytes: 100, response_bytes: 2896, mode: RpcMode::Closed { concurrency: 2 } };
        let mut app = App::Rpc(RpcApp::new(spec, 1448, Rng::new(1, 1), Time::MAX));
        assert_eq!(app.initial_write_seq(), 0, "the server writes only on requests");
        let mut env = Fake::default();
        app.on_timer(AppTimer::Start, Time(5), &mut env);
        assert_eq!(env.started, Some(Time(5)));
        // Each request reaches the server after the reverse path's delay and
        // carries the client's pending ACK.
        assert_eq!(env.timers, vec![(Time(15), AppTimer::RpcRequest); 2]);
        assert_eq!(env.piggybacks, 2);
        app.on_timer(AppTimer::RpcRequest, Time(15), &mut env);
        assert_eq!(env.writes, vec![2]);
        env.rcv_nxt = 2;
        app.on_data(Time(40), &mut env);
        assert_eq!(env.done, vec![(Time(5), Time(40), 2896)]);
        assert_eq!(env.timers.last(), Some(&(Time(50), AppTimer::RpcRequest)), "next request at once");
        assert_eq!(env.piggybacks, 3);
    }

    #[test]
    fn an_open_loop_schedules_arrivals_only_within_the_run() {
        let spec = RpcSpec { request_bytes: 100, response_bytes: 1000, mode: RpcMode::Open { rate_per_s: 1000.0 } };
        let end = Time::from_millis(50);
        let mut app = App::Rpc(RpcApp::new(spec, 1448, Rng::new(1, 2), end));
        let mut env = Fake::default();
        app.on_timer(AppTimer::Start, Time::ZERO, &mut env);
        while let Some(&(at, AppTimer::RpcIssue)) = env.timers.iter().rev().find(|t| t.1 == AppTimer::RpcIssue) {
            let before = env.timers.len();
            app.on_timer(AppTimer::RpcIssue, at, &mut env);
            let issued = env.timers[before..].iter().any(|t| t.1 == AppTimer::RpcIssue);
            if !issued {
                break;
            }
            assert!(env.timers.last().unwrap().0 <= end);
        }
        assert!(env.piggybacks > 20, "about 50 arrivals in 50 ms, got {}", env.piggybacks);
        assert!(env.timers.iter().all(|t| t.1 != AppTimer::RpcIssue || t.0 <= end));
    }

    #[test]
    fn a_bulk_application_only_starts_its_sender() {
        let mut app = App::Bulk;
        assert_eq!(app.initial_write_seq(), u64::MAX);
        let mut env = Fake::default();
        app.on_timer(AppTimer::Start, Time(3), &mut env);
        app.on_data(Time(4), &mut env);
        assert_eq!(env.started, Some(Time(3)));
        assert!(env.timers.is_empty() && env.writes.is_empty() && env.done.is_empty());
    }
}
