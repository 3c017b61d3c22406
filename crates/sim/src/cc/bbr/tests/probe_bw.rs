//! PROBE_BW gain cycling (bbr_update_cycle_phase, bbr_is_next_cycle_phase,
//! bbr_reset_probe_bw_mode).

use super::*;

const PHASE_GAINS: [u32; 8] = [320, 192, 256, 256, 256, 256, 256, 256];

/// bbr_pacing_gain[] = {5/4, 3/4, 1, 1, 1, 1, 1, 1}; each phase lasts more
/// than min_rtt (the 5/4 phase also needs inflight >= its target, met here).
#[test]
fn probe_bw_cycles_eight_gains() {
    assert_eq!(BBR_PACING_GAIN, PHASE_GAINS);
    let mut s = Synth::new();
    s.enter_probe_bw();
    assert_eq!(s.bbr.state_label(&s.tp), "probe_bw");
    let step = Time::from_millis(5);
    let mut phases = Vec::new(); // (cycle_idx, pacing_gain, start time)
    phases.push((s.bbr.cycle_idx(), s.bbr.pacing_gain(), s.tp.now));
    while phases.len() < 17 {
        // In flight high enough for the 5/4 phase to reach its target.
        s.ack(Ack::round(PKTS_PER_RTT).dt(step).acked(50).in_flight(1000));
        let last = *phases.last().unwrap();
        if s.bbr.cycle_idx() != last.0 {
            phases.push((s.bbr.cycle_idx(), s.bbr.pacing_gain(), s.tp.now));
        }
    }
    for w in phases.windows(2) {
        let ((i0, g0, t0), (i1, _, t1)) = (w[0], w[1]);
        assert_eq!(i1, (i0 + 1) % 8, "phases advance one at a time");
        assert_eq!(g0, PHASE_GAINS[i0 as usize], "gain of phase {i0}");
        // First ACK with elapsed > min_rtt (20 ms) at a 5 ms ACK clock.
        assert_eq!(t1 - t0, Time::from_millis(25), "phase {i0} length");
    }
    let gains: Vec<u32> = phases.iter().map(|p| p.1).collect();
    assert_eq!(gains.iter().filter(|&&g| g == 320).count(), 2);
    assert_eq!(gains.iter().filter(|&&g| g == 192).count(), 2);
}

/// bbr_reset_probe_bw_mode(): cycle_idx = CYCLE_LEN - 1 -
/// prandom_u32_max(bbr_cycle_rand), then advance: any phase but the 3/4
/// one; drawn from the per-connection seed.
#[test]
fn probe_bw_random_start_phase_is_never_the_3_4_phase() {
    let mut seen = [0u32; 8];
    for seed in 0..400u64 {
        let tp = ConnState::new(MSS);
        let mut b = Bbr::with_seed(seed);
        b.reset_probe_bw_mode(&tp);
        seen[b.cycle_idx() as usize] += 1;
        let mut again = Bbr::with_seed(seed);
        again.reset_probe_bw_mode(&tp);
        assert_eq!(again.cycle_idx(), b.cycle_idx(), "deterministic per seed");
    }
    assert_eq!(seen[1], 0, "never starts in the 3/4 phase");
    for (i, n) in seen.iter().enumerate() {
        if i != 1 {
            assert!(*n > 20, "phase {i} drawn {n} times of 400");
        }
    }
}

/// bbr_is_next_cycle_phase(): the 5/4 phase persists past min_rtt until
/// inflight reaches bbr_inflight(bw, 5/4), or a loss says it won't fit.
#[test]
fn probe_bw_5_4_phase_waits_for_inflight_target_or_loss() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    s.pin_phase(0);
    let ms = Time::from_millis(1);
    // 40 ms (twice min_rtt) at in flight 200, below the 5/4 target.
    for _ in 0..8 {
        s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms.mul(5)).in_flight(200));
    }
    assert_eq!(s.bbr.cycle_idx(), 0);
    assert_eq!(s.bbr.pacing_gain(), 320);
    // A loss ends it.
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).in_flight(200).losses(1));
    assert_eq!(s.bbr.cycle_idx(), 1);
    assert_eq!(s.bbr.pacing_gain(), 192);

    // Or reaching the target: inflight (+ the EDT skb) >= 5/4 BDP + budget.
    let mut s = Synth::new();
    s.enter_probe_bw();
    s.pin_phase(0);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms.mul(21)).in_flight(200));
    assert_eq!(s.bbr.cycle_idx(), 0);
    let target = s.bbr.inflight(&s.tp, s.bbr.max_bw(), 320);
    let edt = Bbr::tso_segs_goal(&s.tp);
    let need = target - edt; // prior_in_flight = in_flight + acked (10)
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).in_flight(need - 11));
    assert_eq!(s.bbr.cycle_idx(), 0, "one short of the target");
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).in_flight(need - 10));
    assert_eq!(s.bbr.cycle_idx(), 1);
}

/// bbr_is_next_cycle_phase(): the 3/4 phase ends early, before min_rtt,
/// once inflight falls to bbr_inflight(bw, 1.0).
#[test]
fn probe_bw_3_4_phase_ends_early_when_inflight_at_target() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    s.pin_phase(1);
    assert_eq!(s.bbr.pacing_gain(), 192);
    let ms = Time::from_millis(1);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).in_flight(1000));
    assert_eq!(s.bbr.cycle_idx(), 1);
    // The target as of the 3/4 pacing rate (the TSO budget depends on it).
    let target = s.bbr.inflight(&s.tp, s.bbr.max_bw(), BBR_UNIT);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).in_flight(target - 9)); // prior = target+1
    assert_eq!(s.bbr.cycle_idx(), 1);
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(ms).in_flight(target - 10));
    assert_eq!(s.bbr.cycle_idx(), 2, "ended after 3 ms, well before min_rtt");
    assert_eq!(s.bbr.pacing_gain(), BBR_UNIT);
}

/// bbr_set_cwnd() in PROBE_BW: cwnd = min(cwnd + acked, bbr_inflight(bw,
/// cwnd_gain 2)) — it is cut down to the target once the pipe is full.
#[test]
fn probe_bw_cwnd_is_two_bdp_plus_quantization_budget() {
    let mut s = Synth::new();
    s.enter_probe_bw();
    s.tp.snd_cwnd = 5000;
    s.ack(Ack::round(PKTS_PER_RTT).same_round().dt(Time::from_millis(1)).in_flight(300));
    let tso = Bbr::tso_segs_goal(&s.tp);
    let aggr = s.bbr.ack_aggregation_cwnd();
    assert_eq!(s.bbr.bdp(s.bbr.bw(), BBR_CWND_GAIN), 400);
    assert_eq!(s.tp.snd_cwnd, (400 + aggr + 3 * tso + 1) & !1);
}
