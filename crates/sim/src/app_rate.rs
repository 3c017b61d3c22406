//! An application-limited bulk sender (base.py AppLimit,
//! docs/path-dynamics.md "Application-limited senders"): the application
//! writes at a limited rate that can change, and pauses.
//!
//! The application wakes every `tick` from its stream's start. At a tick
//! it applies the steps due (a step at `at` takes effect at the first tick
//! at or after it), then, at a limited rate and not paused, adds the bytes
//! the rate owes for one tick to what it owes and writes the whole
//! segments of it (the simulator counts segments; the fraction carries to
//! the next tick). A pause writes nothing, and ticks spent paused owe
//! nothing (no catching up). "Unlimited" returns to always having data
//! (`write_seq = u64::MAX`, as App::Bulk).
//!
//! A write that does not fit the send buffer blocks as a blocking write()
//! does (tcp_sendmsg_locked() → sk_stream_wait_memory()): the segments
//! that fit are queued, the application waits for the rest, which is
//! queued as room appears (checked at each tick), and the ticks it spends
//! blocked owe nothing. Each write reaches the sender's send path at once
//! (tcp_sendmsg_locked() → tcp_push()), where Linux marks the connection
//! app-limited once the written data is all sent
//! (tcp_rate_check_app_limited(), Sender::push), and restarts from idle
//! per the CCA's rule (tcp_slow_start_after_idle_check(); BBR's
//! CA_EVENT_TX_START).
//!
//! From a limited rate (or a pause) after an unlimited one, what the
//! application had written still drains: a bulk writer keeps the send
//! buffer full, so write_seq stops at snd_una + the buffer's segments
//! ([`AppEnv::stop_writing`](crate::app::AppEnv)).

use crate::app::AppEnv;
use crate::event::AppTimer;
use crate::path::trigger::Trigger;
use crate::plan;
use crate::scenario::{err, positive, ConfigError};
use crate::units::Time;

/// A change of the application at a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AppChange {
    /// The write rate per stream from now on (`None`: unlimited).
    Rate(Option<f64>),
    /// Write nothing for this long, then resume at the rate in force.
    Pause(Time),
}

/// The application's rates and pauses, checked (from the plan's AppLimit).
#[derive(Clone, Debug, PartialEq)]
pub struct AppSchedule {
    pub tick: Time,
    /// The write rate at the start (`None`: unlimited).
    pub rate_bps: Option<f64>,
    /// Changes, strictly in time order, at times from the run's start.
    pub steps: Vec<(Time, AppChange)>,
    /// Changes that wait for a sender's state (`on`): the engine inserts
    /// each among `steps` when it fires (path::trigger, RateBulk::insert).
    pub triggered: Vec<(Trigger, AppChange)>,
}

/// Reads a step's `on` (the scenario's reader, which knows the flows'
/// states), naming the field given.
pub type ReadTrigger<'a> = &'a dyn Fn(&plan::StateTrigger, &str) -> Result<Trigger, ConfigError>;

impl AppSchedule {
    /// The plan's `app` of flow `at("")`, checked; errors name the field
    /// (`flows[0].app.steps[1].pause_s`).
    pub fn from_plan(
        p: &plan::AppLimit,
        at: &dyn Fn(&str) -> String,
        read_trigger: ReadTrigger,
    ) -> Result<AppSchedule, ConfigError> {
        let tick_s = positive(p.tick_s, &at("app.tick_s"))?;
        let rate_bps = p
            .rate_bps
            .map(|r| positive(Some(r), &at("app.rate_bps")))
            .transpose()?;
        let mut steps = Vec::new();
        let mut triggered = Vec::new();
        let mut last = 0.0f64;
        for (i, step) in p.steps.iter().flatten().enumerate() {
            let key = |k: &str| at(&format!("app.steps[{i}].{k}"));
            let change = match (step.rate_bps, step.pause_s) {
                (Some(_), Some(_)) => return err(
                    key("pause_s"),
                    "a step is a rate (rate_bps, null: unlimited) or a pause (pause_s), not both",
                ),
                (rate, None) => AppChange::Rate(
                    rate.map(|r| positive(Some(r), &key("rate_bps")))
                        .transpose()?,
                ),
                (None, pause) => {
                    AppChange::Pause(Time::from_secs_f64(positive(pause, &key("pause_s"))?))
                }
            };
            if let Some(on) = &step.on {
                if step.at_s.is_some() {
                    return err(
                        key("at_s"),
                        "a step happens at a time (at_s) or on a state change (on), not both",
                    );
                }
                triggered.push((read_trigger(on, &key("on"))?, change));
                continue;
            }
            let at_s = positive(step.at_s, &key("at_s"))?;
            if at_s <= last {
                return err(key("at_s"), format!("timed steps must be in time order, strictly after the previous ({last} s), got {at_s}"));
            }
            last = at_s;
            steps.push((Time::from_secs_f64(at_s), change));
        }
        let tick = Time::from_secs_f64(tick_s);
        if tick == Time::ZERO {
            return err(
                at("app.tick_s"),
                format!("below the simulator's 1 ns clock, got {tick_s}"),
            );
        }
        Ok(AppSchedule {
            tick,
            rate_bps,
            steps,
            triggered,
        })
    }
}

/// The plan's `app` of a flow of `kind` (only "bulk" takes one).
pub fn app_schedule(
    p: Option<&plan::AppLimit>,
    kind: &str,
    at: &dyn Fn(&str) -> String,
    read_trigger: ReadTrigger,
) -> Result<Option<AppSchedule>, ConfigError> {
    match p {
        None => Ok(None),
        Some(_) if kind != "bulk" => err(
            at("app"),
            format!("only a flow of kind bulk takes an application limit (this one is {kind})"),
        ),
        Some(p) => AppSchedule::from_plan(p, at, read_trigger).map(Some),
    }
}

/// The state of one stream's application-limited writer.
#[derive(Debug)]
pub struct RateBulk {
    sched: AppSchedule,
    mss_bytes: f64,
    /// The stream's start: ticks fall at start + k·tick.
    start: Time,
    /// End of the run: no tick after it.
    end: Time,
    /// Steps applied so far.
    next_step: usize,
    rate_bps: Option<f64>,
    paused_until: Time,
    /// Bytes owed that do not make a whole segment yet.
    owed_bytes: f64,
    /// Segments of a write blocked on the send buffer.
    blocked_segs: u64,
    /// write_seq is u64::MAX (the application always has data).
    unlimited: bool,
    /// The tick the application's one pending write timer is for (None:
    /// none pending); a timer for another instant is stale (insert()
    /// booked an earlier one).
    wake: Option<Time>,
}

impl RateBulk {
    pub fn new(sched: AppSchedule, mss: u32, start: Time, end: Time) -> RateBulk {
        let unlimited = sched.rate_bps.is_none();
        RateBulk {
            rate_bps: sched.rate_bps,
            sched,
            mss_bytes: f64::from(mss.max(1)),
            start,
            end,
            next_step: 0,
            paused_until: Time::ZERO,
            owed_bytes: 0.0,
            blocked_segs: 0,
            unlimited,
            wake: None,
        }
    }

    /// Segments written before the start: all (u64::MAX) when the rate
    /// starts unlimited, none otherwise (the first tick writes).
    pub fn initial_write_seq(&self) -> u64 {
        if self.unlimited {
            u64::MAX
        } else {
            0
        }
    }

    /// The first tick at or after `t`.
    fn tick_at_or_after(&self, t: Time) -> Time {
        if t <= self.start {
            return self.start;
        }
        let tick = self.sched.tick.as_nanos();
        self.start + Time::from_nanos((t - self.start).as_nanos().div_ceil(tick) * tick)
    }

    /// A change that waited for a sender's state fires at `at` (≥ `now`,
    /// path::trigger): it takes its place among the steps not yet applied
    /// (after those at the same instant) and takes effect at the first
    /// tick at or after `at`. Returns the instant of a write timer to book
    /// when none is pending that early (the application was unlimited, or
    /// its next wake is later).
    pub fn insert(&mut self, at: Time, change: AppChange) -> Option<Time> {
        let pos =
            self.next_step + self.sched.steps[self.next_step..].partition_point(|&(t, _)| t <= at);
        self.sched.steps.insert(pos, (at, change));
        let due = self.tick_at_or_after(at);
        if due > self.end || self.wake.is_some_and(|w| w <= due) {
            return None;
        }
        self.wake = Some(due);
        Some(due)
    }

    /// The write timer fired at `now`: a tick, unless insert() booked an
    /// earlier one since (this one is stale then).
    pub fn on_write_timer<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        if self.wake == Some(now) {
            self.on_tick(now, env);
        }
    }

    /// A tick at `now`: apply the steps due, write what the rate owes,
    /// and wake at the next tick (or, unlimited, at the next step).
    pub fn on_tick<E: AppEnv>(&mut self, now: Time, env: &mut E) {
        self.wake = None;
        while let Some(&(at, change)) = self.sched.steps.get(self.next_step) {
            if at > now {
                break;
            }
            match change {
                AppChange::Rate(r) => self.rate_bps = r,
                AppChange::Pause(d) => self.paused_until = self.paused_until.max(at + d),
            }
            self.next_step += 1;
        }
        let paused = now < self.paused_until;
        let unlimited = !paused && self.rate_bps.is_none();
        if unlimited && !self.unlimited {
            self.owed_bytes = 0.0;
            self.blocked_segs = 0;
            env.write(now, u64::MAX);
        } else if !unlimited && self.unlimited {
            env.stop_writing();
        }
        self.unlimited = unlimited;
        if !unlimited {
            if let (Some(rate), false, 0) = (self.rate_bps, paused, self.blocked_segs) {
                self.owed_bytes += rate * self.sched.tick.as_secs_f64() / 8.0;
                let segs = (self.owed_bytes / self.mss_bytes).floor();
                self.owed_bytes -= segs * self.mss_bytes;
                self.blocked_segs = segs as u64;
            }
            let fits = self.blocked_segs.min(env.send_buffer_room());
            if fits > 0 {
                self.blocked_segs -= fits;
                env.write(now, fits);
            }
        }
        let next = if unlimited {
            match self.sched.steps.get(self.next_step) {
                Some(&(at, _)) => self.tick_at_or_after(at),
                None => return,
            }
        } else {
            now + self.sched.tick
        };
        if next <= self.end {
            self.wake = Some(next);
            env.schedule(next, AppTimer::Write);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream by hand: a send buffer of `room` segments that nothing drains.
    struct Fake {
        timers: Vec<Time>,
        write_seq: u64,
        snd_una: u64,
        buffer_segs: u64,
        writes: Vec<(Time, u64)>,
    }

    impl AppEnv for Fake {
        fn schedule(&mut self, at: Time, _timer: AppTimer) {
            self.timers.push(at);
        }
        fn start(&mut self, _now: Time) {}
        fn write(&mut self, now: Time, segs: u64) {
            self.write_seq = self.write_seq.saturating_add(segs);
            self.writes.push((now, segs));
        }
        fn send_buffer_room(&self) -> u64 {
            (self.snd_una + self.buffer_segs).saturating_sub(self.write_seq)
        }
        fn stop_writing(&mut self) {
            self.write_seq = self.write_seq.min(self.snd_una + self.buffer_segs);
        }
        fn send_request_delay(&self) -> Time {
            Time::ZERO
        }
        fn piggyback(&mut self, _now: Time) {}
        fn rcv_nxt(&self) -> u64 {
            0
        }
        fn rpc_done(&mut self, _start: Time, _now: Time, _response_bytes: u64) {}
        fn take_piece(&mut self, _id: u32, _slot: u32) -> u64 {
            0
        }
        fn transfer_delivered(&mut self, _id: u32, _segs: u64, _now: Time) {}
    }

    fn fake(buffer_segs: u64) -> Fake {
        Fake {
            timers: Vec::new(),
            write_seq: 0,
            snd_una: 0,
            buffer_segs,
            writes: Vec::new(),
        }
    }

    fn sched(rate_bps: Option<f64>, steps: Vec<(Time, AppChange)>) -> AppSchedule {
        AppSchedule {
            tick: Time::from_millis(1),
            rate_bps,
            steps,
            triggered: Vec::new(),
        }
    }

    /// A plan without state triggers reads none.
    fn no_trigger(_: &plan::StateTrigger, field: &str) -> Result<Trigger, ConfigError> {
        err(field, "no trigger expected")
    }

    /// Runs the application's ticks up to `until`.
    fn run(app: &mut RateBulk, env: &mut Fake, until: Time) {
        while let Some(&t) = env.timers.last() {
            if t > until {
                break;
            }
            env.timers.pop();
            app.on_tick(t, env);
        }
    }

    #[test]
    fn each_tick_writes_the_rates_bytes_carrying_the_fraction() {
        // 12 Mbit/s = 1500 bytes per ms: 1.5 segments of 1000 bytes, so
        // the ticks write 1, 2, 1, 2, ...
        let mut app = RateBulk::new(
            sched(Some(12e6), vec![]),
            1000,
            Time::ZERO,
            Time::from_secs(1),
        );
        let mut env = fake(u64::MAX / 2);
        app.on_tick(Time::ZERO, &mut env);
        run(&mut app, &mut env, Time::from_millis(99));
        let segs: Vec<u64> = env.writes.iter().map(|w| w.1).collect();
        assert_eq!(&segs[..4], &[1, 2, 1, 2]);
        assert_eq!(env.write_seq, 150, "100 ticks of 1.5 segments");
    }

    #[test]
    fn a_pause_writes_nothing_and_resumes_without_catching_up() {
        let steps = vec![(
            Time::from_millis(10),
            AppChange::Pause(Time::from_millis(20)),
        )];
        let mut app = RateBulk::new(
            sched(Some(8e6), steps),
            1000,
            Time::ZERO,
            Time::from_secs(1),
        );
        let mut env = fake(u64::MAX / 2);
        app.on_tick(Time::ZERO, &mut env);
        run(&mut app, &mut env, Time::from_millis(49));
        // 1 segment per ms at ticks 0..10 and 30..50: 30 in all.
        assert_eq!(env.write_seq, 30);
        assert!(env
            .writes
            .iter()
            .all(|&(t, _)| t < Time::from_millis(10) || t >= Time::from_millis(30)));
    }

    #[test]
    fn a_write_that_does_not_fit_blocks_and_the_ticks_it_blocks_owe_nothing() {
        let mut app = RateBulk::new(
            sched(Some(80e6), vec![]),
            1000,
            Time::ZERO,
            Time::from_secs(1),
        );
        let mut env = fake(25);
        app.on_tick(Time::ZERO, &mut env); // 10 segments
        run(&mut app, &mut env, Time::from_millis(3)); // 10, then 5 of 10 fit
        assert_eq!(env.write_seq, 25);
        env.snd_una = 100; // the buffer drains
        run(&mut app, &mut env, Time::from_millis(4));
        assert_eq!(
            env.write_seq, 30,
            "the blocked write's 5 left, no bytes for the ticks it blocked"
        );
    }

    #[test]
    fn unlimited_always_has_data_and_a_limit_after_it_keeps_the_buffer_written() {
        let steps = vec![
            (Time::from_millis(5), AppChange::Rate(Some(8e6))),
            (Time::from_millis(10), AppChange::Rate(None)),
        ];
        let mut app = RateBulk::new(sched(None, steps), 1000, Time::ZERO, Time::from_secs(1));
        assert_eq!(app.initial_write_seq(), u64::MAX);
        let mut env = fake(40);
        env.write_seq = u64::MAX;
        app.on_tick(Time::ZERO, &mut env);
        assert_eq!(
            env.timers,
            vec![Time::from_millis(5)],
            "unlimited: wake at the next step only"
        );
        run(&mut app, &mut env, Time::from_millis(5));
        assert_eq!(env.write_seq, 40, "the full buffer is what was written");
        env.snd_una = 40;
        run(&mut app, &mut env, Time::from_millis(9));
        assert_eq!(
            env.write_seq, 44,
            "one segment per tick at 8 Mbit/s from 6 to 9 ms"
        );
        run(&mut app, &mut env, Time::from_millis(10));
        assert_eq!(env.write_seq, u64::MAX);
        assert!(env.timers.is_empty(), "no more steps: no more ticks");
    }

    #[test]
    fn the_plan_is_checked_naming_the_field() {
        let at = |k: &str| format!("flows[0].{k}");
        let step = |at_s, rate_bps, pause_s| plan::AppStep {
            at_s: Some(at_s),
            rate_bps,
            pause_s,
            on: None,
        };
        let p = plan::AppLimit {
            rate_bps: Some(1e6),
            tick_s: Some(1e-3),
            steps: Some(vec![step(2.0, None, Some(1.0)), step(1.0, Some(1e6), None)]),
        };
        let e = AppSchedule::from_plan(&p, &at, &no_trigger).unwrap_err();
        assert_eq!(e.field, "flows[0].app.steps[1].at_s");
        let p = plan::AppLimit {
            rate_bps: Some(1e6),
            tick_s: Some(1e-3),
            steps: Some(vec![step(2.0, Some(1e6), Some(1.0))]),
        };
        assert_eq!(
            AppSchedule::from_plan(&p, &at, &no_trigger)
                .unwrap_err()
                .field,
            "flows[0].app.steps[0].pause_s"
        );
        let p = plan::AppLimit {
            rate_bps: Some(-1.0),
            tick_s: Some(1e-3),
            steps: None,
        };
        assert_eq!(
            AppSchedule::from_plan(&p, &at, &no_trigger)
                .unwrap_err()
                .field,
            "flows[0].app.rate_bps"
        );
        let p = plan::AppLimit {
            rate_bps: None,
            tick_s: None,
            steps: None,
        };
        assert_eq!(
            AppSchedule::from_plan(&p, &at, &no_trigger)
                .unwrap_err()
                .field,
            "flows[0].app.tick_s"
        );
        let ok = plan::AppLimit {
            rate_bps: None,
            tick_s: Some(1e-3),
            steps: None,
        };
        assert_eq!(
            app_schedule(Some(&ok), "rpc", &at, &no_trigger)
                .unwrap_err()
                .field,
            "flows[0].app"
        );
    }
}
