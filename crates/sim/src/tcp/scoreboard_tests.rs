//! Property tests: the run-length scoreboard (runs, the range-based
//! time-sorted list, per-run ACK folding) against a straightforward
//! per-segment reference on random send/SACK/loss/retransmit/ACK
//! sequences.

use crate::rng::Rng;
use crate::units::Time;

use super::rack::Rack;
use super::rate::RateState;
use super::scoreboard::{Scoreboard, Seg, FLAG_APP_LIMITED, FLAG_EVER_RETRANS, FLAG_LOST, FLAG_RETRANS, FLAG_SACKED};

/// The per-segment model: one `Seg` per segment and one time-sorted entry
/// per transmission, as the scoreboard was before runs.
#[derive(Default)]
struct Reference {
    una: u64,
    segs: Vec<Seg>,
    tsorted: Vec<(u64, u32)>,
}

impl Reference {
    fn seg(&self, seq: u64) -> &Seg {
        &self.segs[(seq - self.una) as usize]
    }

    fn seg_mut(&mut self, seq: u64) -> &mut Seg {
        &mut self.segs[(seq - self.una) as usize]
    }

    fn nxt(&self) -> u64 {
        self.una + self.segs.len() as u64
    }

    fn live(&self, seq: u64, id: u32) -> bool {
        if seq < self.una {
            return false;
        }
        let s = self.seg(seq);
        s.tx_id == id && !s.has(FLAG_SACKED) && (!s.has(FLAG_LOST) || s.has(FLAG_RETRANS))
    }

    /// tcp_rack_detect_loss() per segment: lost segments in walk order and
    /// the longest remaining wait.
    fn rack_walk(&self, rack: &Rack, now: Time, reo: Time) -> (Vec<u64>, Time) {
        let (mut lost, mut wait) = (Vec::new(), Time::ZERO);
        for &(seq, id) in &self.tsorted {
            if !self.live(seq, id) {
                continue;
            }
            let x = self.seg(seq).xmit;
            if !(rack.mstamp > x || (rack.mstamp == x && rack.end_seq > seq)) {
                break;
            }
            let deadline = x + rack.rtt + reo;
            if deadline <= now {
                lost.push(seq);
            } else {
                wait = wait.max(deadline - now);
            }
        }
        (lost, wait)
    }

    fn oldest_live(&self) -> Option<(u64, Time)> {
        self.tsorted.iter().find(|&&(seq, id)| self.live(seq, id)).map(|&(seq, _)| (seq, self.seg(seq).xmit))
    }
}

/// Applies random operations to both structures and checks that every
/// segment's state, RACK's walk and the oldest live transmission agree.
fn run_random_sequence(seed: u64) {
    let mut rng = Rng::new(seed, 7);
    let mut pick = |n: u64| rng.next_u64() % n.max(1);
    let mut sb = Scoreboard::default();
    let mut rf = Reference::default();
    let mut now = Time::ZERO;
    let mut delivered = 0u32;
    for _step in 0..400 {
        now += Time::from_micros(1 + pick(50));
        let nxt = rf.nxt();
        let outstanding = nxt - rf.una;
        match pick(8) {
            // A TSO burst of new data: in_flight steps, sometimes the
            // snapshot changes mid-burst (an ACK between two pushes). The
            // scoreboard takes each stretch of one snapshot either segment
            // by segment or as one range (Sender::queue_new's burst).
            0 | 1 => {
                let n = 1 + pick(12);
                let app = if pick(4) == 0 { FLAG_APP_LIMITED } else { 0 };
                let by_range = pick(2) == 0;
                let mut stretch: Option<(Seg, u32)> = None;
                for k in 0..n {
                    if pick(10) == 0 {
                        delivered += 1;
                    }
                    let seg = Seg { xmit: now, tx_id: 1, delivered, in_flight: (outstanding + k) as u32 + 1, flags: app, ..Seg::default() };
                    if !by_range {
                        sb.push_new(seg);
                    } else {
                        stretch = match stretch {
                            Some((first, len)) if first.delivered == delivered => Some((first, len + 1)),
                            Some((first, len)) => {
                                assert_eq!(sb.push_new_range(first, len), nxt + k - len as u64, "seed {seed}: range's first seq");
                                Some((seg, 1))
                            }
                            None => Some((seg, 1)),
                        };
                    }
                    rf.segs.push(seg);
                    rf.tsorted.push((nxt + k, 1));
                }
                if let Some((first, len)) = stretch {
                    assert_eq!(sb.push_new_range(first, len), nxt + n - len as u64, "seed {seed}: range's first seq");
                }
            }
            // SACK of a random range: flags change, SACKed snapshots used.
            2 | 3 if outstanding > 0 => {
                let a = rf.una + pick(outstanding);
                let b = (a + 1 + pick(16)).min(nxt);
                sb.set_flags(a, b, FLAG_SACKED, FLAG_LOST | FLAG_RETRANS);
                for seq in a..b {
                    let s = rf.seg_mut(seq);
                    s.flags = (s.flags & !(FLAG_LOST | FLAG_RETRANS)) | FLAG_SACKED;
                }
            }
            // Loss marking of a range (tcp_mark_skb_lost's flag change).
            4 if outstanding > 0 => {
                let a = rf.una + pick(outstanding);
                let b = (a + 1 + pick(8)).min(nxt);
                for seq in a..b {
                    let f = rf.seg(seq).flags;
                    let (set, clear) = if f & FLAG_SACKED != 0 {
                        (0, 0)
                    } else if f & FLAG_LOST != 0 {
                        (0, FLAG_RETRANS)
                    } else {
                        (FLAG_LOST, 0)
                    };
                    sb.set_flags(seq, seq + 1, set, clear);
                    let s = rf.seg_mut(seq);
                    s.flags = (s.flags & !clear) | set;
                }
            }
            // Retransmissions of lost, unSACKed segments in sequence order,
            // one by one or (Sender::retransmit_range) a run's stretch at
            // once.
            5 if outstanding > 0 => {
                let a = rf.una + pick(outstanding);
                let b = (a + 1 + pick(6)).min(nxt);
                let by_range = pick(2) == 0;
                let mut k = 0;
                let mut seq = a;
                while seq < b {
                    let f = rf.seg(seq).flags;
                    if f & FLAG_LOST == 0 || f & (FLAG_SACKED | FLAG_RETRANS) != 0 {
                        seq += 1;
                        continue;
                    }
                    let end = if by_range { b.min(sb.run_at(seq).end) } else { seq + 1 };
                    let upd = |s: &mut Seg, k: u32| {
                        s.xmit = now;
                        s.tx_id = s.tx_id.wrapping_add(1);
                        s.flags |= FLAG_RETRANS | FLAG_EVER_RETRANS;
                        s.in_flight = outstanding as u32 + k;
                    };
                    sb.isolate(seq, end);
                    let id = sb.id_at(seq);
                    upd(&mut sb.run_mut(id).seg, k + 1);
                    sb.note_retransmit(seq, end);
                    for q in seq..end {
                        k += 1;
                        upd(rf.seg_mut(q), k);
                        rf.tsorted.push((q, rf.seg(q).tx_id));
                    }
                    seq = end;
                }
            }
            // A cumulative ACK, often inside a burst.
            6 if outstanding > 0 => {
                let upto = rf.una + 1 + pick(outstanding.min(20));
                let mut seq = rf.una;
                while sb.snd_una < upto {
                    let r = sb.pop_acked(upto);
                    assert_eq!(r.start, seq, "seed {seed}: acked run starts where the last ended");
                    for s in r.start..r.end {
                        assert_eq!(r.seg_at(s), *rf.seg(s), "seed {seed}: acked segment {s}");
                    }
                    seq = r.end;
                }
                rf.segs.drain(..(upto - rf.una) as usize);
                rf.una = upto;
            }
            _ => {}
        }
        // Every segment's state is the reference's.
        assert_eq!((sb.snd_una, sb.snd_nxt), (rf.una, rf.nxt()), "seed {seed}");
        for seq in rf.una..rf.nxt() {
            assert_eq!(sb.get(seq), *rf.seg(seq), "seed {seed}: segment {seq}");
        }
        let mut seq = rf.una;
        let mut runs = 0;
        while seq < rf.nxt() {
            let r = sb.run_at(seq);
            assert_eq!(r.start, seq, "seed {seed}: runs are contiguous");
            assert!(r.start < r.end, "seed {seed}: empty run");
            for s in r.start..r.end {
                assert_eq!(sb.id_at(s), sb.id_at(seq), "seed {seed}: segment {s} maps to its run");
            }
            seq = r.end;
            runs += 1;
        }
        assert_eq!(runs, sb.run_count(), "seed {seed}: run count");
        // RACK's walk and the oldest live transmission are the reference's.
        if rf.nxt() > rf.una && pick(2) == 0 {
            let acked = rf.una + pick(rf.nxt() - rf.una);
            let rack = Rack { mstamp: rf.seg(acked).xmit, end_seq: acked, rtt: Time::from_micros(pick(200)), ..Rack::default() };
            let reo = Time::from_micros(pick(3) * 20);
            assert_eq!(sb.oldest_live(), rf.oldest_live(), "seed {seed}: oldest live");
            let (want_lost, want_wait) = rf.rack_walk(&rack, now, reo);
            let mut lost = Vec::new();
            let wait = rack.detect_loss(&mut sb, now, reo, &mut lost);
            let got: Vec<u64> = lost.iter().flat_map(|&(a, b)| a..b).collect();
            assert_eq!(got, want_lost, "seed {seed}: RACK's lost segments");
            assert_eq!(wait, want_wait, "seed {seed}: RACK's wait");
            // Mark them as tcp_mark_skb_lost() would, in walk order.
            for seq in got {
                let f = rf.seg(seq).flags;
                let (set, clear) = if f & FLAG_LOST != 0 { (0, FLAG_RETRANS) } else { (FLAG_LOST, 0) };
                sb.set_flags(seq, seq + 1, set, clear);
                let s = rf.seg_mut(seq);
                s.flags = (s.flags & !clear) | set;
            }
        }
    }
}

#[test]
fn runs_keep_exactly_the_per_segment_state_and_rack_marks_the_same_segments() {
    // Also: a burst queued as one range (push_new_range) is the same as
    // its segments queued one by one.
    for seed in 0..200 {
        run_random_sequence(seed);
    }
}

/// tcp_write_xmit() queues a TSO skb at once: a range of new segments
/// with one snapshot is one run (joined to an equal tail) and one
/// time-sorted entry, with in_flight stepping per segment.
#[test]
fn a_burst_queued_as_one_range_is_one_run_stepping_in_flight_per_segment() {
    let mut one = Scoreboard::default();
    let mut each = Scoreboard::default();
    let seg = Seg { xmit: Time(7), tx_id: 1, delivered: 3, in_flight: 5, ..Seg::default() };
    assert_eq!(one.push_new_range(seg, 6), 0);
    assert_eq!(one.push_new_range(Seg { in_flight: 11, ..seg }, 4), 6);
    for k in 0..10u32 {
        each.push_new(Seg { in_flight: 5 + k, ..seg });
    }
    assert_eq!((one.run_count(), one.tsorted.len(), one.snd_nxt), (1, 1, 10));
    for s in 0..10 {
        assert_eq!(one.get(s), each.get(s), "segment {s}");
    }
    // A later send time starts a new run and a new time-sorted entry.
    one.push_new_range(Seg { xmit: Time(8), in_flight: 15, ..seg }, 3);
    assert_eq!((one.run_count(), one.tsorted.len(), one.get(12).in_flight), (2, 2, 17));
}

/// A split gives the new id to the shorter side and a merge keeps the
/// longer run's id: cutting one segment out of a long run rewrites few
/// ids, whatever end it is near.
#[test]
fn splits_and_merges_rewrite_only_the_shorter_sides_run_ids() {
    let mut sb = Scoreboard::default();
    sb.push_new_range(Seg { xmit: Time(7), tx_id: 1, in_flight: 1, ..Seg::default() }, 40);
    let long = sb.id_at(0);
    sb.set_flags(30, 31, FLAG_LOST, 0);
    sb.set_flags(3, 4, FLAG_LOST, 0);
    assert_eq!(sb.run_count(), 5);
    // The long middle part (4..30) kept the original id.
    assert!((4..30).all(|q| sb.id_at(q) == long));
    assert!([0, 3, 30, 31].iter().all(|&q| sb.id_at(q) != long));
    // Undoing both merges everything back into that id.
    sb.set_flags(3, 4, 0, FLAG_LOST);
    sb.set_flags(30, 31, 0, FLAG_LOST);
    assert_eq!(sb.run_count(), 1);
    assert!((0..40).all(|q| sb.id_at(q) == long));
    assert_eq!((sb.run_at(0).start, sb.run_at(0).end, sb.get(39).in_flight), (0, 40, 40));
}

#[test]
fn a_sack_inside_a_burst_splits_it_at_the_block_edges_only() {
    let mut sb = Scoreboard::default();
    for k in 0..20u32 {
        sb.push_new(Seg { xmit: Time(7), tx_id: 1, in_flight: k + 1, ..Seg::default() });
    }
    assert_eq!(sb.run_count(), 1);
    sb.set_flags(5, 9, FLAG_SACKED, 0);
    let runs: Vec<(u64, u64)> = [0, 5, 9].iter().map(|&s| (sb.run_at(s).start, sb.run_at(s).end)).collect();
    assert_eq!((runs, sb.run_count()), (vec![(0, 5), (5, 9), (9, 20)], 3));
    // SACKing the hole below joins the SACKed part (tcp_shifted_skb()).
    sb.set_flags(0, 5, FLAG_SACKED, 0);
    let runs: Vec<(u64, u64)> = [0, 9].iter().map(|&s| (sb.run_at(s).start, sb.run_at(s).end)).collect();
    assert_eq!((runs, sb.run_count()), (vec![(0, 9), (9, 20)], 2));
}

/// tcp_rate_skb_delivered() and tcp_rack_advance() applied to every
/// segment of a run in order leave the same state as applied to its last
/// segment alone: that is what lets the ACK paths work per run.
#[test]
fn delivering_a_run_samples_and_advances_rack_as_its_last_segment() {
    let mut rng = Rng::new(3, 11);
    for case in 0..2000 {
        let mut pick = |n: u64| rng.next_u64() % n;
        let flags = (pick(32) as u8) & !FLAG_LOST;
        let xmit = Time(100 + pick(4));
        let run_start = 50 + pick(10);
        let n = 1 + pick(6);
        let mut run = super::scoreboard::Run {
            start: run_start,
            end: run_start + n,
            seg: Seg { xmit, first_tx: Time(90), delivered_mstamp: Time(95), delivered: 40, in_flight: 9, tx_id: 1, flags, ..Seg::default() },
        };
        if pick(5) == 0 {
            run.seg.delivered_mstamp = Time::ZERO;
        }
        // A prior state from an earlier delivery on the same ACK.
        let mut rate = RateState::default();
        rate.begin_ack(10);
        if pick(2) == 0 {
            let prior_seq = 45 + pick(20);
            let mut prior = Seg { xmit: Time(100 + pick(4)), delivered_mstamp: Time(93), ..Seg::default() };
            rate.on_delivered(&mut prior, prior_seq, 60);
        }
        let mut rack = Rack { mstamp: Time(100 + pick(4)), end_seq: 45 + pick(20), ..Rack::default() };
        let (now, min_rtt) = (Time(200), Time(pick(150)));
        let (mut rate_one, mut rack_one) = (rate.clone(), rack.clone());
        let mut per_seg_mstamp = run.seg.delivered_mstamp;
        for seq in run.start..run.end {
            let mut s = run.seg_at(seq);
            rate.on_delivered(&mut s, seq, 60);
            per_seg_mstamp = s.delivered_mstamp;
            rack.advance(flags, seq, xmit, now, min_rtt);
        }
        let mut last = run.last_seg();
        rate_one.on_delivered(&mut last, run.end - 1, 60);
        rack_one.advance(flags, run.end - 1, xmit, now, min_rtt);
        assert_eq!(format!("{rate:?}"), format!("{rate_one:?}"), "case {case}: rate sample");
        assert_eq!(format!("{rack:?}"), format!("{rack_one:?}"), "case {case}: RACK state");
        assert_eq!(last.delivered_mstamp, per_seg_mstamp, "case {case}: SACKed snapshot used");
    }
}

#[test]
fn rack_judges_a_run_sent_at_rack_mstamp_only_below_rack_end_seq() {
    let mut sb = Scoreboard::default();
    for k in 0..10u32 {
        sb.push_new(Seg { xmit: Time(5), tx_id: 1, in_flight: k + 1, ..Seg::default() });
    }
    // Segment 6 of the burst was delivered: 0..6 were "sent before" it
    // by tcp_skb_sent_after()'s sequence tie-break, 7..10 were not.
    sb.set_flags(6, 7, FLAG_SACKED, 0);
    let rack = Rack { mstamp: Time(5), end_seq: 6, rtt: Time(1), ..Rack::default() };
    let mut lost = Vec::new();
    let wait = rack.detect_loss(&mut sb, Time(100), Time::ZERO, &mut lost);
    assert_eq!((lost, wait), (vec![(0, 6)], Time::ZERO));
}
