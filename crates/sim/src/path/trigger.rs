//! Changes that wait for the sender's state instead of a time (`on =
//! "enter:DRAIN"`, docs/path-dynamics.md): a [`Trigger`] names a state
//! change of one flow's first stream, as its CCA's log records it
//! (tcp/cc_log.rs), and [`Pending`] holds what each trigger does until its
//! event is logged. Generic over what fires, so that any item of a plan
//! may take the `on` form. Only the simulator can watch a sender's state:
//! the kernel's BBR exposes its mode only to polling (TCP_CC_INFO).

use crate::tcp::cc_log::CcEvent;
use crate::units::Time;

/// Entering a state or leaving it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    Enter,
    Exit,
}

/// The nth time flow `group`'s first stream enters (or leaves) `state`,
/// plus `after`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trigger {
    pub edge: Edge,
    /// The state as the CCA's log names it (`drain`, `probe_bw_down`).
    pub state: &'static str,
    /// Which occurrence, from 1.
    pub nth: u32,
    /// The flow (the plan's flows index) whose first stream is watched.
    pub group: usize,
    pub after: Time,
}

/// The draft's names of BBRv3's PROBE_BW phases (draft-ietf-ccwg-bbr
/// §4.3.3) and the log's names of them (hooks.rs `state_label`, the
/// kernel's BBR_PHASE_* spelled lower-case).
const DRAFT_PHASES: [(&str, &str); 4] = [
    ("probe_up", "probe_bw_up"),
    ("probe_down", "probe_bw_down"),
    ("probe_cruise", "probe_bw_cruise"),
    ("probe_refill", "probe_bw_refill"),
];

impl Trigger {
    /// Reads `on` ("enter:STATE" or "exit:STATE"), STATE one of `states`
    /// (the CCA's log names, crate::cc::CongestionControl::state_labels)
    /// in any case, or a draft name of a BBRv3 phase (PROBE_DOWN). The
    /// error says what is allowed.
    pub fn parse(on: &str, states: &[&'static str], nth: u32, group: usize, after: Time) -> Result<Trigger, String> {
        let (edge, name) = match on.split_once(':') {
            Some(("enter", s)) => (Edge::Enter, s),
            Some(("exit", s)) => (Edge::Exit, s),
            _ => return Err(format!("cannot read {on:?}: write enter:STATE or exit:STATE, such as enter:DRAIN")),
        };
        let lower = name.trim().to_ascii_lowercase();
        let log_name = DRAFT_PHASES.iter().find(|p| p.0 == lower).map_or(lower.as_str(), |p| p.1);
        let Some(&state) = states.iter().find(|s| **s == log_name) else {
            let known: Vec<String> = states.iter().map(|s| s.to_ascii_uppercase()).collect();
            return Err(format!("{name:?} is not a state of this flow's congestion control; its states are {}", known.join(", ")));
        };
        if nth == 0 {
            return Err("nth counts occurrences from 1".into());
        }
        Ok(Trigger { edge, state, nth, group, after })
    }

    /// Whether `e` is an occurrence of this trigger's event.
    pub fn matches(&self, e: &CcEvent) -> bool {
        e.kind == "cc_state"
            && match self.edge {
                Edge::Enter => e.vars.state == self.state,
                Edge::Exit => e.from_state == self.state,
            }
    }
}

/// One trigger, the occurrences seen, and what it does (taken when it fires).
#[derive(Clone, Debug)]
struct Item<T> {
    trigger: Trigger,
    seen: u32,
    action: Option<T>,
}

/// Triggers waiting for their events.
#[derive(Clone, Debug)]
pub struct Pending<T> {
    items: Vec<Item<T>>,
    /// Per flow: the events of its log already read.
    read: Vec<usize>,
}

impl<T> Default for Pending<T> {
    fn default() -> Pending<T> {
        Pending { items: Vec::new(), read: Vec::new() }
    }
}

impl<T> Pending<T> {
    pub fn new(items: impl IntoIterator<Item = (Trigger, T)>) -> Pending<T> {
        let items: Vec<Item<T>> = items.into_iter().map(|(trigger, a)| Item { trigger, seen: 0, action: Some(a) }).collect();
        let flows = items.iter().map(|i| i.trigger.group + 1).max().unwrap_or(0);
        Pending { items, read: vec![0; flows] }
    }

    /// Whether a trigger still waits on flow `group`'s events.
    #[inline]
    pub fn watches(&self, group: usize) -> bool {
        self.items.iter().any(|i| i.trigger.group == group && i.action.is_some())
    }

    /// Flow `group`'s log is now `log` (it only grows): reads the events
    /// not read before and returns what fires, in event order, each with
    /// its instant, the event's plus the trigger's `after`, and never
    /// before `now` (an event logged by a timer is seen at the stream's
    /// next ACK).
    pub fn on_log(&mut self, group: usize, log: &[CcEvent], now: Time) -> Vec<(Time, T)> {
        let mut fired = Vec::new();
        let Some(read) = self.read.get_mut(group) else { return fired };
        for e in &log[(*read).min(log.len())..] {
            for item in self.items.iter_mut().filter(|i| i.trigger.group == group && i.action.is_some()) {
                if item.trigger.matches(e) {
                    item.seen += 1;
                    if item.seen == item.trigger.nth {
                        let at = (e.at + item.trigger.after).max(now);
                        fired.push((at, item.action.take().expect("pending")));
                    }
                }
            }
        }
        *read = log.len();
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcVars;

    const BBR: &[&str] = &["startup", "drain", "probe_bw", "probe_rtt"];
    const BBR3: &[&str] = &["startup", "drain", "probe_rtt", "probe_bw_up", "probe_bw_down", "probe_bw_cruise", "probe_bw_refill"];

    fn event(at: u64, from: &'static str, to: &'static str) -> CcEvent {
        CcEvent { at: Time(at), kind: "cc_state", from_state: from, vars: CcVars { state: to, ..CcVars::default() }, cwnd_segments: 10, inflight_segments: 0 }
    }

    #[test]
    fn states_are_read_in_any_case_and_by_the_drafts_phase_names() {
        let t = Trigger::parse("enter:DRAIN", BBR, 1, 0, Time::ZERO).unwrap();
        assert_eq!((t.edge, t.state), (Edge::Enter, "drain"));
        assert_eq!(Trigger::parse("exit:PROBE_DOWN", BBR3, 1, 0, Time::ZERO).unwrap().state, "probe_bw_down");
        assert_eq!(Trigger::parse("enter:probe_bw_up", BBR3, 1, 0, Time::ZERO).unwrap().state, "probe_bw_up");
        let e = Trigger::parse("enter:PROBE_DOWN", BBR, 1, 0, Time::ZERO).unwrap_err();
        assert!(e.contains("STARTUP, DRAIN, PROBE_BW, PROBE_RTT"), "{e}");
        assert!(Trigger::parse("during:DRAIN", BBR, 1, 0, Time::ZERO).unwrap_err().contains("enter:STATE"));
        assert!(Trigger::parse("enter:DRAIN", BBR, 0, 0, Time::ZERO).unwrap_err().contains("from 1"));
    }

    #[test]
    fn the_nth_occurrence_fires_once_at_its_instant_plus_after() {
        let enter = Trigger::parse("enter:PROBE_RTT", BBR, 2, 0, Time(5)).unwrap();
        let exit = Trigger::parse("exit:STARTUP", BBR, 1, 0, Time::ZERO).unwrap();
        let mut p = Pending::new([(enter, 'a'), (exit, 'b')]);
        let mut log = vec![event(10, "startup", "drain"), event(20, "drain", "probe_bw")];
        assert_eq!(p.on_log(0, &log, Time(20)), [(Time(20), 'b')]);
        assert!(p.watches(0) && !p.watches(1));
        log.push(event(30, "probe_bw", "probe_rtt"));
        assert!(p.on_log(0, &log, Time(30)).is_empty(), "the first PROBE_RTT is not the second");
        log.push(event(40, "probe_rtt", "probe_bw"));
        log.push(event(50, "probe_bw", "probe_rtt"));
        assert_eq!(p.on_log(0, &log, Time(52)), [(Time(55), 'a')]);
        assert!(!p.watches(0));
        log.push(event(60, "probe_bw", "probe_rtt"));
        assert!(p.on_log(0, &log, Time(60)).is_empty(), "fired once");
    }

    #[test]
    fn an_event_seen_late_fires_now_and_other_flows_are_not_read() {
        let t = Trigger::parse("enter:DRAIN", BBR, 1, 1, Time::ZERO).unwrap();
        let mut p = Pending::new([(t, ())]);
        let log = [event(10, "startup", "drain")];
        assert!(p.on_log(0, &log, Time(10)).is_empty(), "flow 0 is not watched");
        assert_eq!(p.on_log(1, &log, Time(15)), [(Time(15), ())]);
    }
}
