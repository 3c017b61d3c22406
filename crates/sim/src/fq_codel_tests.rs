//! Rule tests of fq_codel.rs (sch_fq_codel.c, codel_impl.h).

use super::*;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn params() -> FqCodelParams {
    FqCodelParams { limit: 1_000_000, ..FqCodelParams::default() }
}

/// Flows of the next `n` packets dequeued at `now`.
fn order(q: &mut FqCodel<u32>, now: Time, n: usize) -> Vec<u32> {
    (0..n).map(|_| q.dequeue(now).expect("a packet").item).collect()
}

#[test]
fn drr_serves_flows_in_quantum_sized_turns() {
    let mut q = FqCodel::new(&params());
    for _ in 0..20 {
        q.enqueue(Time(0), 0, 500, false, 0);
        q.enqueue(Time(0), 1, 500, false, 1);
    }
    // Quantum 1514: a fresh flow sends 4 × 500 B (deficit 1514 → -486),
    // then each turn adds 1514 (1028: 3 packets, then 1014 ... ).
    let got = order(&mut q, Time(0), 14);
    assert_eq!(got, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1]);
}

#[test]
fn drr_quantum_is_configurable() {
    let mut q = FqCodel::new(&FqCodelParams { quantum: 3000, ..params() });
    for _ in 0..20 {
        q.enqueue(Time(0), 0, 1000, false, 0);
        q.enqueue(Time(0), 1, 1000, false, 1);
    }
    assert_eq!(order(&mut q, Time(0), 6), [0, 0, 0, 1, 1, 1]);
}

#[test]
fn a_new_flow_is_served_before_old_ones() {
    let mut q = FqCodel::new(&params());
    for _ in 0..20 {
        q.enqueue(Time(0), 0, 500, false, 0);
    }
    // Flow 0 spends its first quantum and is now an old flow with credit.
    assert_eq!(order(&mut q, Time(0), 5), [0; 5]);
    q.enqueue(Time(0), 7, 500, false, 7);
    assert_eq!(order(&mut q, Time(0), 2), [7, 0]);
}

#[test]
fn an_emptied_new_flow_passes_through_old_flows_once() {
    let mut q = FqCodel::new(&params());
    for _ in 0..20 {
        q.enqueue(Time(0), 0, 500, false, 0);
    }
    order(&mut q, Time(0), 5);
    q.enqueue(Time(0), 1, 500, false, 1);
    assert_eq!(order(&mut q, Time(0), 1), [1]);
    // Flow 1 is empty: the next dequeue moves it to the tail of
    // old_flows (rather than off the lists) and serves flow 0, so a
    // packet flow 1 sends now is not a new flow's and waits its turn.
    assert_eq!(order(&mut q, Time(0), 1), [0]);
    q.enqueue(Time(0), 1, 500, false, 1);
    assert_eq!(order(&mut q, Time(0), 2), [0, 1]);
}

/// Drives one flow: every `step`, `arrivals` packets of 1500 B arrive and
/// one is dequeued (once `start` has passed). Returns the times of CoDel
/// drops (ns) and of CE marks on the packets dequeued.
fn drive(p: FqCodelParams, ect: bool, step: u64, arrivals: u32, start: u64, end: u64) -> (Vec<u64>, Vec<u64>, FqCodel<u32>) {
    let mut q = FqCodel::new(&p);
    let (mut drops, mut marks) = (Vec::new(), Vec::new());
    let mut t = 0;
    while t < end {
        for _ in 0..arrivals {
            q.enqueue(Time(t), 0, 1500, ect, 0);
        }
        if t >= start {
            let before = q.codel_drops;
            let pkt = q.dequeue(Time(t));
            if q.codel_drops > before {
                drops.push(t);
            }
            if pkt.is_some_and(|p| p.ce) {
                marks.push(t);
            }
        }
        t += step;
    }
    (drops, marks, q)
}

#[test]
fn codel_does_not_drop_while_sojourn_is_below_target() {
    // One packet in, one out every ms, dequeued 4 ms after arrival: a
    // standing queue of 4 packets (well above an MTU) at 4 ms sojourn.
    let (drops, marks, q) = drive(params(), false, MS, 1, 4 * MS, 2_000 * MS);
    assert!(drops.is_empty() && marks.is_empty());
    assert_eq!(q.codel_vars(0).unwrap().ldelay, codel_duration(Time(4 * MS)));
}

#[test]
fn codel_does_not_drop_when_only_an_mtu_is_queued() {
    // 50 ms sojourn but a single packet left behind each dequeue ... none:
    // one arrival every 50 ms, dequeued 50 ms later leaves one packet.
    let (drops, _, _) = drive(params(), false, 50 * MS, 1, 50 * MS, 5_000 * MS);
    assert!(drops.is_empty());
}

#[test]
fn codel_starts_dropping_after_sojourn_exceeds_target_for_an_interval() {
    // Dequeues start at 10 ms: sojourn 10 ms > target from the first one.
    let (drops, _, _) = drive(params(), false, 100 * US, 1, 10 * MS, 400 * MS);
    let first = drops[0];
    // first_above_time = 10 ms + 100 ms; the first drop is the first
    // dequeue after it (codel_time_after), within a step and codel's
    // 1.024 µs clock.
    assert!(first > 110 * MS - 2 * US && first <= 110 * MS + 100 * US + 2 * US, "first drop at {first}");
}

#[test]
fn drop_spacing_follows_interval_over_sqrt_count() {
    // Twice as many arrivals as departures: the sojourn only grows, so
    // CoDel stays in the dropping state and drops at drop_next each time.
    let (drops, _, _) = drive(params(), false, 50 * US, 2, 10 * MS, 1_500 * MS);
    assert!(drops.len() >= 10, "{drops:?}");
    // drop_next(k+1) = drop_next(k) + interval / sqrt(count(k+1)), from
    // the entry drop with count = 1. 1/sqrt(count) is Linux's Newton
    // estimate, one step per drop: coarse for counts 2 and 3 (0.5 for
    // 0.707), within a few percent from 4 on.
    let interval = 100.0 * MS as f64;
    for (k, w) in drops.windows(2).enumerate().take(20) {
        let count = (k + 1) as f64;
        let gap = (w[1] - w[0]) as f64;
        let want = interval / count.sqrt();
        if count == 1.0 || count >= 4.0 {
            assert!((gap - want).abs() < 0.03 * want + 60.0 * US as f64, "gap {k}: {gap} vs {want}");
        }
    }
}

#[test]
fn ect_packets_are_ce_marked_instead_of_dropped() {
    let (drops, marks, q) = drive(params(), true, 100 * US, 1, 10 * MS, 400 * MS);
    assert!(drops.is_empty());
    assert!(marks[0] > 110 * MS - 2 * US && marks[0] <= 110 * MS + 102 * US, "{marks:?}");
    assert_eq!(q.ce_marks, marks.len() as u64);
    // With ecn off (tc's noecn), the same packets are dropped.
    let (drops, marks, _) = drive(FqCodelParams { ecn: false, ..params() }, true, 100 * US, 1, 10 * MS, 400 * MS);
    assert!(!drops.is_empty() && marks.is_empty());
}

#[test]
fn ce_threshold_marks_ect_packets_whose_sojourn_exceeds_it() {
    let p = FqCodelParams { ce_threshold: Some(Time(2 * MS)), ..params() };
    // Sojourn 1 ms: below the threshold.
    let (_, marks, _) = drive(p, true, 100 * US, 1, MS, 50 * MS);
    assert!(marks.is_empty());
    // Sojourn 3 ms: every ECT packet dequeued is marked, with no interval
    // to wait and CoDel never dropping (3 ms < target).
    let (drops, marks, _) = drive(p, true, 100 * US, 1, 3 * MS, 50 * MS);
    assert!(drops.is_empty());
    assert_eq!(marks.len(), (47 * MS / (100 * US)) as usize);
    // Packets that are not ECN-capable are never marked.
    let (_, marks, _) = drive(p, false, 100 * US, 1, 3 * MS, 50 * MS);
    assert!(marks.is_empty());
}

#[test]
fn overflow_drops_from_the_head_of_the_fattest_flow() {
    let mut q = FqCodel::new(&FqCodelParams { limit: 10, ..params() });
    for i in 0..3 {
        q.enqueue(Time(0), 0, 1500, false, i);
    }
    for i in 0..7 {
        q.enqueue(Time(0), 1, 1500, false, 100 + i);
    }
    q.enqueue(Time(0), 0, 1500, false, 3);
    // Over the limit: flow 1 (10500 B) loses head packets until half its
    // backlog (5250 B) is gone: 4 packets.
    assert_eq!(q.overlimit_drops, 4);
    assert_eq!((q.flow_backlog(0), q.flow_backlog(1)), (6000, 4500));
    assert_eq!(q.len(), (7, 10500));
    // CoDel's signal grows by the packets dropped.
    assert_eq!(q.codel_vars(1).unwrap().count, 4);
    let served: Vec<u32> = std::iter::from_fn(|| q.dequeue(Time(0)).map(|p| p.item)).collect();
    assert!(served.contains(&104) && !served.contains(&103));
}

#[test]
fn overflow_drops_at_most_a_batch_of_64() {
    let mut q = FqCodel::new(&FqCodelParams { limit: 200, ..params() });
    for i in 0..201 {
        q.enqueue(Time(0), 0, 1500, false, i);
    }
    assert_eq!(q.overlimit_drops, 64);
    assert_eq!(q.dequeue(Time(0)).unwrap().item, 64);
}
