//! CUBIC with HyStart as Linux implements it in net/ipv4/tcp_cubic.c
//! (v2.3, torvalds/linux 617e407c). The module parameters are
//! [`CubicParams`], with Linux's defaults: beta = 717/1024, bic_scale = 41
//! (C = 0.4), hystart_low_window = 16, hystart_ack_delta_us = 2000; the
//! boolean ones stay at theirs (fast_convergence = 1, tcp_friendliness = 1,
//! initial_ssthresh = 0, hystart = 1, hystart_detect = ACK train | delay).
//!
//! The math is RFC 9438; each rule cites the RFC section where Linux
//! matches it and the Linux function where Linux differs (integer
//! arithmetic, table-driven cube root, time in 1/1024 s "BICTCP_HZ" units,
//! target taken one min-RTT ahead, cnt >= 2).
//!
//! Time: Linux mixes jiffies (bictcp_update, epoch_start, last_time) and
//! microseconds (tcp_mstamp, HyStart, delay_min). We derive both from
//! `ConnState::now` (ns) with a fixed `HZ` = 1000, so a jiffy is 1 ms.

use super::jiffies::{jiffies, usecs_to_jiffies, HZ};
use super::{AckSample, CaState, ConnState, CongestionControl, CwndEvent, GSO_MAX_SIZE};
use crate::units::Time;

/// BICTCP_BETA_SCALE (tcp_cubic.c repeats tcp_bic.c's): beta and friends
/// are in units of 1/1024.
const BICTCP_BETA_SCALE: u64 = super::bic::BICTCP_BETA_SCALE as u64;
/// BICTCP_HZ: cubic time is kept in units of 2^-10 s.
const BICTCP_HZ: u32 = 10;

/// tcp_cubic.c's module parameters (`module_param`) that the rules below
/// read, with Linux's defaults. The boolean ones stay at Linux's defaults
/// (fast_convergence = 1, tcp_friendliness = 1, hystart = 1,
/// hystart_detect = ACK train | delay, initial_ssthresh = 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CubicParams {
    /// `beta`: multiplicative decrease in 1/1024, 717 ≈ 0.7 (RFC 9438
    /// §4.6, β_cubic = 0.7).
    pub beta: u32,
    /// `bic_scale`: C = bic_scale/1024 * 10; 41 gives 0.4 (RFC 9438 §5.1).
    pub bic_scale: u32,
    /// `hystart_low_window`: HyStart runs from this cwnd up.
    pub hystart_low_window: u32,
    /// `hystart_ack_delta_us`: ACKs this close (µs) form an ACK train.
    pub hystart_ack_delta_us: u32,
}

impl Default for CubicParams {
    fn default() -> CubicParams {
        CubicParams { beta: 717, bic_scale: 41, hystart_low_window: 16, hystart_ack_delta_us: 2000 }
    }
}

/// What cubictcp_register() computes from the module parameters once.
#[derive(Debug, Clone, Copy)]
struct Registered {
    /// beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta) = 8 / α_cubic
    /// (RFC 9438 §4.3, α_cubic = 3(1-β)/(1+β)); 15 with β 717.
    beta_scale: u64,
    /// cube_rtt_scale = bic_scale * 10 = 1024 * C.
    cube_rtt_scale: u64,
    /// cube_factor = 2^(10 + 3*BICTCP_HZ) / (bic_scale * 10), so that
    /// cubic_root(cube_factor * ΔW) is K = cbrt(ΔW / C) in 1/1024 s.
    cube_factor: u64,
}

impl Registered {
    fn of(p: &CubicParams) -> Registered {
        let beta = u64::from(p.beta);
        let cube_rtt_scale = u64::from(p.bic_scale) * 10;
        Registered {
            beta_scale: 8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta),
            cube_rtt_scale,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale,
        }
    }
}

impl Default for Registered {
    fn default() -> Registered {
        Registered::of(&CubicParams::default())
    }
}

/// HYSTART_MIN_SAMPLES: RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u8 = 8;
/// HYSTART_DELAY_MIN / HYSTART_DELAY_MAX (µs).
const HYSTART_DELAY_MIN_US: u32 = 4000;
const HYSTART_DELAY_MAX_US: u32 = 16000;

/// cubic_root(): Linux's table lookup plus one Newton-Raphson step
/// (avg. error ~0.2 %), kept instead of an exact cube root so K matches
/// Linux bit for bit. Entry i is cbrt(i << 18) - 1.
fn cubic_root(a: u64) -> u32 {
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, 123, 129, 134, 138, 143, 147, 151, 156, 157, 161,
        164, 168, 170, 173, 176, 179, 181, 185, 187, 190, 192, 194, 197, 199, 200, 202, 204,
        206, 209, 211, 213, 215, 217, 219, 221, 222, 224, 225, 227, 229, 231, 232, 234, 236,
        237, 239, 240, 242, 244, 245, 246, 248, 250, 251, 252, 254,
    ];
    // fls64(): 1-based index of the most significant set bit, 0 for 0.
    let b = 64 - a.leading_zeros() as u64;
    if b < 7 {
        return ((V[a as usize] as u32) + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let idx = (a >> (b * 3)) as usize;
    let x = (((V[idx.min(63)] as u64) + 10) << b) >> 6;
    // x_{k+1} = (2 x_k + a / x_k^2) / 3, with Linux's x*(x-1) and *341>>10.
    let den = x.saturating_mul(x.saturating_sub(1)).max(1);
    let x = 2 * x + a / den;
    ((x * 341) >> 10) as u32
}

/// `struct bictcp`.
#[derive(Debug, Clone, Default)]
pub struct Cubic {
    params: CubicParams,
    registered: Registered,
    /// Increase cwnd by 1 after this many acked segments.
    cnt: u32,
    /// W_max: cwnd before the last reduction (after fast convergence).
    last_max_cwnd: u32,
    /// cwnd and jiffies of the last full bictcp_update().
    last_cwnd: u32,
    last_time: u64,
    /// W_max of the cubic function for this epoch (origin point).
    bic_origin_point: u32,
    /// K in units of 1/1024 s.
    bic_k: u32,
    /// Minimum RTT seen (µs); 0 = none.
    delay_min: u32,
    /// Jiffies at the beginning of the current epoch; None = no epoch
    /// (Linux uses 0).
    epoch_start: Option<u64>,
    /// Segments acked since the Reno-friendly estimate was last advanced.
    ack_cnt: u32,
    /// W_est, the Reno-friendly window estimate (RFC 9438 §4.3).
    tcp_cwnd: u32,
    // HyStart state (bictcp_hystart_reset).
    sample_cnt: u8,
    found: bool,
    /// µs clock at the start of the current HyStart round.
    round_start: u64,
    /// snd_nxt (segments) when the HyStart round started (ca->end_seq):
    /// the round ends when snd_una passes it.
    end_seq: u64,
    /// µs clock of the last ACK of the current ACK train.
    last_ack: u64,
    /// Minimum RTT (µs) of the current round.
    curr_rtt: u32,
}

impl Cubic {
    pub fn new() -> Cubic {
        Cubic::default()
    }

    /// CUBIC with the given module parameters.
    pub fn with_params(params: CubicParams) -> Cubic {
        Cubic { params, registered: Registered::of(&params), ..Cubic::default() }
    }

    /// bictcp_reset(): clear everything up to the HyStart round fields
    /// (the module parameters stay).
    fn reset(&mut self) {
        let keep = (self.round_start, self.end_seq, self.last_ack, self.curr_rtt, self.sample_cnt);
        *self = Cubic::with_params(self.params);
        (self.round_start, self.end_seq, self.last_ack, self.curr_rtt, self.sample_cnt) = keep;
        self.found = false;
    }

    /// bictcp_hystart_reset(): start a new HyStart round.
    fn hystart_reset(&mut self, tp: &ConnState) {
        let now_us = tp.now.as_micros();
        self.round_start = now_us;
        self.last_ack = now_us;
        self.end_seq = tp.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// bictcp_update(): compute `cnt`, the number of acked segments per
    /// one-segment cwnd increase, from the cubic function and the
    /// Reno-friendly estimate.
    fn update(&mut self, cwnd: u32, acked: u32, now: Time) {
        let now_j = jiffies(now);
        self.ack_cnt = self.ack_cnt.saturating_add(acked);

        // Recompute at most 32 times per second while cwnd is unchanged.
        if self.last_cwnd == cwnd && now_j.saturating_sub(self.last_time) <= HZ / 32 {
            return;
        }
        // ... and at most once per jiffy; a reduction clears epoch_start,
        // which forces a recomputation.
        if self.epoch_start.is_none() || now_j != self.last_time {
            self.update_cubic(cwnd, acked, now_j);
        }
        self.tcp_friendliness(cwnd);
        // The fastest CUBIC grows is 1 segment per 2 acked, 1.5x per RTT
        // (Linux; RFC 9438 §4.2 caps the target at 1.5 cwnd instead).
        self.cnt = self.cnt.max(2);
    }

    /// The cubic-function part of bictcp_update() (RFC 9438 §4.2, §4.4, §4.5).
    fn update_cubic(&mut self, cwnd: u32, acked: u32, now_j: u64) {
        self.last_cwnd = cwnd;
        self.last_time = now_j;

        let epoch_start = match self.epoch_start {
            Some(e) => e,
            None => {
                // New epoch (RFC 9438 §4.2: t = 0 at the start of CA).
                self.epoch_start = Some(now_j);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd; // W_est = cwnd_epoch (RFC 9438 §4.3)
                if self.last_max_cwnd <= cwnd {
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    // K = cbrt((W_max - cwnd_epoch) / C) (RFC 9438 §4.2 eq. 2),
                    // in 1/1024 s via cube_factor.
                    let dw = (self.last_max_cwnd - cwnd) as u64;
                    self.bic_k = cubic_root(self.registered.cube_factor.saturating_mul(dw));
                    self.bic_origin_point = self.last_max_cwnd;
                }
                now_j
            }
        };

        // t in 1/1024 s, taken one delay_min ahead: Linux's form of RFC 9438
        // §4.2's target W_cubic(t + RTT).
        let t_j = now_j.saturating_sub(epoch_start) + usecs_to_jiffies(self.delay_min as u64);
        let t = (t_j << BICTCP_HZ) / HZ;
        let k = self.bic_k as u64;
        let offs = t.abs_diff(k) as u128;
        // C * (t - K)^3 in segments (RFC 9438 §4.2 eq. 1).
        let delta = (self.registered.cube_rtt_scale as u128 * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
        let delta = delta.min(u32::MAX as u128) as u32;
        let bic_target = if t < k {
            self.bic_origin_point.saturating_sub(delta) // concave (§4.4)
        } else {
            self.bic_origin_point.saturating_add(delta) // convex (§4.5)
        };

        // cwnd grows by (target - cwnd) / cwnd per acked segment (§4.4).
        self.cnt = if bic_target > cwnd {
            cwnd / (bic_target - cwnd)
        } else {
            cwnd.saturating_mul(100) // very small increment
        };

        // Before the first loss the curve is too conservative: at least 5 %
        // growth per RTT (Linux only).
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
    }

    /// The `tcp_friendliness` part of bictcp_update(): W_est grows by
    /// α_cubic per cwnd of acked segments (RFC 9438 §4.3 eq. 4); if W_est is
    /// ahead of cwnd, grow at least as fast as it does. Linux keeps α_cubic
    /// even once W_est passes W_max (RFC 9438 §4.3 switches to 1 there).
    fn tcp_friendliness(&mut self, cwnd: u32) {
        let delta = ((cwnd as u64 * self.registered.beta_scale) >> 3).max(1);
        let ack_cnt = self.ack_cnt as u64;
        if ack_cnt > delta {
            // `while (ack_cnt > delta) { ack_cnt -= delta; tcp_cwnd++; }`
            let n = (ack_cnt - 1) / delta;
            self.ack_cnt = (ack_cnt - n * delta) as u32;
            self.tcp_cwnd = self.tcp_cwnd.saturating_add(n.min(u32::MAX as u64) as u32);
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
    }

    /// hystart_ack_delay(): TSO/GRO cushion, min(1 ms, 4 GSO packets at the
    /// pacing rate), 0 when the pacing rate is unset.
    fn hystart_ack_delay(tp: &ConnState) -> u64 {
        let bytes_per_sec = tp.pacing_rate.bps() / 8;
        if bytes_per_sec == 0 {
            return 0;
        }
        (GSO_MAX_SIZE * 4 * 1_000_000 / bytes_per_sec).min(1000)
    }

    /// hystart_update(): exit slow start (ssthresh = cwnd) on an ACK train
    /// longer than delay_min/2, or a round whose min RTT exceeds delay_min
    /// by clamp(delay_min/8, 4 ms, 16 ms).
    fn hystart_update(&mut self, tp: &mut ConnState, delay: u32) {
        // A round ends once snd_una passes the snd_nxt of its start
        // (after(tp->snd_una, ca->end_seq)), whatever cwnd is; only the
        // detectors wait for hystart_low_window (commit 25c1a9ca53db,
        // "tcp_cubic: fix incorrect HyStart round start detection").
        if tp.snd_una > self.end_seq {
            self.hystart_reset(tp);
        }
        if tp.snd_cwnd < self.params.hystart_low_window {
            return;
        }
        // HYSTART_ACK_TRAIN: ACKs spaced <= hystart_ack_delta_us (2 ms) form a train.
        let now_us = tp.now.as_micros();
        if now_us.saturating_sub(self.last_ack) <= u64::from(self.params.hystart_ack_delta_us) {
            self.last_ack = now_us;
            let mut threshold = self.delay_min as u64 + Self::hystart_ack_delay(tp);
            // Without pacing (SK_PACING_NONE) the train is the whole round
            // compressed: trigger past delay_min / 2. A socket paced by the
            // CCA (SK_PACING_NEEDED) or by fq (SK_PACING_FQ) spreads a round
            // over up to RTT/2 more (hystart_update(), tcp_cubic.c).
            if !tp.pacing_enabled && !tp.qdisc_paces {
                threshold >>= 1;
            }
            if now_us.saturating_sub(self.round_start) > threshold {
                self.found = true;
                tp.snd_ssthresh = tp.snd_cwnd;
            }
        }
        // HYSTART_DELAY: min RTT of >= 8 samples this round vs delay_min.
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = (self.delay_min >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US);
            if self.curr_rtt > self.delay_min.saturating_add(thresh) {
                self.found = true;
                tp.snd_ssthresh = tp.snd_cwnd;
            }
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// cubictcp_init(): reset, start a HyStart round; initial_ssthresh = 0
    /// leaves ssthresh infinite.
    fn init(&mut self, tp: &mut ConnState) {
        self.reset();
        self.hystart_reset(tp);
    }

    /// cubictcp_recalc_ssthresh(): end the epoch, remember W_max with fast
    /// convergence (RFC 9438 §4.7: W_max = cwnd (1+β)/2 when below the
    /// previous W_max), and cut to β·cwnd (RFC 9438 §4.6), at least 2.
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        self.epoch_start = None;
        let cwnd = tp.snd_cwnd as u64;
        let beta = u64::from(self.params.beta);
        self.last_max_cwnd = if tp.snd_cwnd < self.last_max_cwnd {
            (cwnd * (BICTCP_BETA_SCALE + beta) / (2 * BICTCP_BETA_SCALE)) as u32
        } else {
            tp.snd_cwnd
        };
        ((cwnd * beta / BICTCP_BETA_SCALE) as u32).max(2)
    }

    /// cubictcp_cong_avoid(): grow only when cwnd-limited
    /// (tcp_is_cwnd_limited, RFC 9438 §5.8); slow start below ssthresh, the
    /// leftover acked segments go to bictcp_update + tcp_cong_avoid_ai.
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tp.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update(tp.snd_cwnd, acked, tp.now);
        let cnt = self.cnt;
        tp.cong_avoid_ai(cnt, acked);
    }

    /// cubictcp_state(): an RTO (Loss) forgets W_max and the epoch and
    /// restarts HyStart (RFC 9438 §4.8 resets on timeout too).
    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset();
            self.hystart_reset(tp);
        }
    }

    /// cubictcp_cwnd_event(): on TX start after idle, shift epoch_start by
    /// the idle time so cwnd resumes on the cubic curve (RFC 9438 §5.8),
    /// never past now. Idle is measured from tp->lsndtime, the last send.
    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        if ev != CwndEvent::TxStart {
            return;
        }
        let now_j = jiffies(tp.now);
        let delta = now_j.saturating_sub(jiffies(tp.lsndtime));
        if let Some(e) = self.epoch_start {
            if delta > 0 {
                self.epoch_start = Some(e.saturating_add(delta).min(now_j));
            }
        }
    }

    /// cubictcp_acked(): track delay_min (µs) and run HyStart in slow start
    /// (its detectors once cwnd >= hystart_low_window).
    fn pkts_acked(&mut self, tp: &mut ConnState, sample: &AckSample) {
        // Calls without an RTT sample (rtt_us < 0) are ignored.
        let Some(rtt) = sample.rtt else { return };
        // Discard delay samples within 1 s of an epoch start (right after
        // fast recovery).
        if let Some(e) = self.epoch_start {
            if jiffies(tp.now).saturating_sub(e) < HZ {
                return;
            }
        }
        let delay = rtt.as_micros().clamp(1, u32::MAX as u64) as u32;
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && tp.in_slow_start() {
            self.hystart_update(tp, delay);
        }
    }

    /// Linux's cubictcp registers tcp_reno_undo_cwnd(): max(cwnd,
    /// prior_cwnd) (RFC 9438 §4.9 would also restore W_max; Linux does not).
    fn undo_cwnd(&mut self, tp: &mut ConnState) -> u32 {
        tp.snd_cwnd.max(tp.prior_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::TCP_INFINITE_SSTHRESH;

    fn conn(cwnd: u32, ssthresh: u32) -> ConnState {
        let mut tp = ConnState::new(1448);
        tp.snd_cwnd = cwnd;
        tp.snd_ssthresh = ssthresh;
        tp.is_cwnd_limited = true;
        tp
    }

    fn ack(c: &mut Cubic, tp: &mut ConnState, rtt: Time) {
        let s = AckSample { pkts_acked: 1, rtt: Some(rtt), in_flight: tp.snd_cwnd };
        c.pkts_acked(tp, &s);
        c.cong_avoid(tp, 1);
    }

    /// ACK-clocked flow at a fixed RTT: each round acks one cwnd of segments
    /// one by one, evenly spaced over the RTT, until `until`.
    fn run_until(c: &mut Cubic, tp: &mut ConnState, rtt: Time, until: Time) {
        while tp.now < until {
            let n = tp.snd_cwnd.max(1);
            let gap = rtt.div(n as u64);
            for _ in 0..n {
                tp.now += gap;
                ack(c, tp, rtt);
                if tp.now >= until {
                    return;
                }
            }
            next_round(tp);
        }
    }

    /// snd_una passes the snd_nxt of the HyStart round's start (ca->end_seq):
    /// the next ACK starts a new round.
    fn next_round(tp: &mut ConnState) {
        tp.snd_una = tp.snd_nxt + 1;
        tp.snd_nxt = tp.snd_una + 1000;
    }

    /// A flow in congestion avoidance right after a loss at `w_max`.
    fn after_loss(w_max: u32, rtt: Time) -> (Cubic, ConnState) {
        let mut c = Cubic::new();
        let mut tp = conn(w_max, TCP_INFINITE_SSTHRESH);
        c.init(&mut tp);
        tp.now = Time::from_secs(1);
        c.pkts_acked(&mut tp, &AckSample { pkts_acked: 1, rtt: Some(rtt), in_flight: w_max });
        let ssthresh = c.ssthresh(&tp);
        tp.snd_ssthresh = ssthresh;
        tp.snd_cwnd = ssthresh;
        (c, tp)
    }

    #[test]
    fn beta_is_717_over_1024_of_cwnd() {
        let mut c = Cubic::new();
        assert_eq!(c.ssthresh(&conn(1000, 10)), 700);
        assert_eq!(c.ssthresh(&conn(100, 10)), 70);
        assert_eq!(c.ssthresh(&conn(2, 10)), 2, "at least 2");
        // No overflow at huge windows: 10^9 * 717 / 1024.
        assert_eq!(Cubic::new().ssthresh(&conn(1_000_000_000, 10)), 700_195_312);
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_loss_below_previous_max() {
        let mut c = Cubic::new();
        c.ssthresh(&conn(1000, 10));
        assert_eq!(c.last_max_cwnd, 1000);
        // Loss below the previous W_max: W_max = cwnd (1 + β) / 2.
        assert_eq!(c.ssthresh(&conn(800, 10)), 560);
        assert_eq!(c.last_max_cwnd, 800 * 1741 / 2048);
        // Loss at or above it: W_max = cwnd.
        c.ssthresh(&conn(900, 10));
        assert_eq!(c.last_max_cwnd, 900);
    }

    #[test]
    fn k_is_cube_root_of_w_max_minus_cwnd_over_c_in_1024ths_of_a_second() {
        for (w_max, rtt_ms) in [(1000u32, 100u64), (100, 10), (20_000, 50)] {
            let (mut c, mut tp) = after_loss(w_max, Time::from_millis(rtt_ms));
            ack(&mut c, &mut tp, Time::from_millis(rtt_ms));
            let dw = (w_max - w_max * 717 / 1024) as f64; // W_max - cwnd_epoch
            let k = (dw / 0.4).cbrt() * 1024.0;
            let err = (c.bic_k as f64 - k).abs() / k;
            assert!(err < 0.01, "w_max {w_max}: K {} vs {k:.0}", c.bic_k);
        }
    }

    #[test]
    fn linux_cubic_root_is_within_one_percent_of_exact() {
        // Every K Linux computes has a >= cube_factor (W_max - cwnd >= 1).
        let mut a = Registered::default().cube_factor;
        while a < u64::MAX / 3 {
            let exact = (a as f64).cbrt();
            let err = (cubic_root(a) as f64 - exact).abs() / exact;
            assert!(err < 0.01, "cbrt({a}) = {} vs {exact}", cubic_root(a));
            a = a / 2 * 3 + 7;
        }
        // Small arguments: off by at most one.
        for a in 0..5000u64 {
            let exact = (a as f64).cbrt();
            assert!((cubic_root(a) as f64 - exact).abs() <= 1.0, "cbrt({a}) = {}", cubic_root(a));
        }
    }

    #[test]
    fn cwnd_returns_to_w_max_after_k_seconds() {
        // RFC 9438 §4.2 eq. 1/2: W_cubic(K) = W_max, K = cbrt(W_max(1-β)/C).
        let rtt = Time::from_millis(100);
        let (mut c, mut tp) = after_loss(1000, rtt);
        assert_eq!(tp.snd_cwnd, 700);
        let t0 = tp.now;
        let k = Time::from_secs_f64((300.0f64 / 0.4).cbrt());
        run_until(&mut c, &mut tp, rtt, t0 + k.div(2));
        let half = tp.snd_cwnd;
        assert!(half > 900 && half < 1000, "concave: {half} at K/2");
        run_until(&mut c, &mut tp, rtt, t0 + k);
        let at_k = tp.snd_cwnd as f64;
        assert!((at_k - 1000.0).abs() <= 15.0, "cwnd {at_k} at K, want ~1000");
        // Plateau around W_max, then convex growth beyond it (§4.5).
        run_until(&mut c, &mut tp, rtt, t0 + k + Time::from_secs(5));
        let w = 1000.0 + 0.4 * 5.0f64.powi(3);
        assert!((tp.snd_cwnd as f64 - w).abs() / w < 0.05, "{} at K+5s, want ~{w}", tp.snd_cwnd);
    }

    #[test]
    fn tcp_friendly_region_grows_at_least_like_reno_at_small_bdp() {
        // W_max = 20 at 10 ms: K ≈ 2.5 s, so the cubic curve stays below 20
        // for 2 s, while W_est grows α_cubic = 3(1-β)/(1+β) ≈ 0.53 per RTT
        // (RFC 9438 §4.3), and cwnd follows W_est.
        let rtt = Time::from_millis(10);
        let (mut c, mut tp) = after_loss(20, rtt);
        assert_eq!(tp.snd_cwnd, 14);
        let t0 = tp.now;
        run_until(&mut c, &mut tp, rtt, t0 + Time::from_secs(2));
        let rounds = 200.0;
        let growth = (tp.snd_cwnd - 14) as f64;
        assert!(growth >= 0.45 * rounds, "grew {growth} in {rounds} RTTs");
        assert!(growth <= 0.6 * rounds, "grew {growth} in {rounds} RTTs");
    }

    #[test]
    fn first_epoch_without_loss_grows_at_least_5_percent_per_rtt() {
        // bictcp_update(): cnt <= 20 while last_max_cwnd == 0.
        let rtt = Time::from_millis(100);
        let mut c = Cubic::new();
        let mut tp = conn(100, 100);
        c.init(&mut tp);
        c.pkts_acked(&mut tp, &AckSample { pkts_acked: 1, rtt: Some(rtt), in_flight: 100 });
        run_until(&mut c, &mut tp, rtt, Time::from_millis(1000));
        assert!(tp.snd_cwnd as f64 >= 100.0 * 1.05f64.powi(9), "cwnd {}", tp.snd_cwnd);
    }

    #[test]
    fn increase_is_at_most_one_segment_per_two_acked() {
        // cnt >= 2: cwnd grows at most 1.5x per RTT however far the target.
        let mut c = Cubic::new();
        let mut tp = conn(100, 50);
        c.ssthresh(&tp); // last_max_cwnd = 100 = cwnd: K = 0, origin 100
        c.cong_avoid(&mut tp, 1); // epoch starts at t = 0
        tp.now = Time::from_secs(100); // target = 100 + 0.4 * 100^3
        let start = tp.snd_cwnd;
        for _ in 0..start {
            c.cong_avoid(&mut tp, 1);
        }
        assert_eq!(c.cnt, 2);
        let grown = tp.snd_cwnd - start;
        assert!((45..=50).contains(&grown), "grew {grown} on {start} acks");
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let (mut c, mut tp) = after_loss(1000, Time::from_millis(100));
        tp.is_cwnd_limited = false;
        let cwnd = tp.snd_cwnd;
        for i in 0..5000 {
            tp.now = Time::from_secs(2) + Time::from_millis(i);
            c.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, cwnd);
        let mut tp = conn(10, TCP_INFINITE_SSTHRESH);
        tp.is_cwnd_limited = false;
        c.cong_avoid(&mut tp, 10);
        assert_eq!(tp.snd_cwnd, 10, "no slow start either");
    }

    #[test]
    fn slow_start_leftover_acks_feed_cubic_update() {
        let mut c = Cubic::new();
        let mut tp = conn(10, 12);
        c.cong_avoid(&mut tp, 4);
        assert_eq!(tp.snd_cwnd, 12);
        assert!(c.epoch_start.is_some(), "2 leftover acks went to bictcp_update");
        assert_eq!(c.ack_cnt, 2);
    }

    #[test]
    fn hystart_delay_exit_sets_ssthresh_to_cwnd() {
        let mut c = Cubic::new();
        let mut tp = conn(32, TCP_INFINITE_SSTHRESH);
        c.init(&mut tp);
        let base = Time::from_millis(100);
        let s = |rtt| AckSample { pkts_acked: 1, rtt: Some(rtt), in_flight: 32 };
        // Round 0 at the base RTT; ACKs 5 ms apart are no ACK train.
        for _ in 0..12 {
            tp.now += Time::from_millis(5);
            c.pkts_acked(&mut tp, &s(base));
        }
        assert_eq!(c.delay_min, 100_000);
        assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        // Round 1: +10 ms is below clamp(100/8, 4, 16) = 12.5 ms.
        next_round(&mut tp);
        for _ in 0..12 {
            tp.now += Time::from_millis(5);
            c.pkts_acked(&mut tp, &s(Time::from_millis(110)));
        }
        assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        // Round 2: +15 ms; fires on the first sample after the 8 needed.
        next_round(&mut tp);
        for i in 1..=9 {
            tp.now += Time::from_millis(5);
            c.pkts_acked(&mut tp, &s(Time::from_millis(115)));
            let exited = tp.snd_ssthresh == tp.snd_cwnd;
            assert_eq!(exited, i == 9, "sample {i}");
        }
        assert!(c.found);
        // Found: no more HyStart until reset.
        tp.snd_cwnd = 40;
        tp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        c.pkts_acked(&mut tp, &s(Time::from_millis(200)));
        assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    }

    #[test]
    fn hystart_ack_train_exit() {
        let mut c = Cubic::new();
        let mut tp = conn(64, TCP_INFINITE_SSTHRESH);
        c.init(&mut tp);
        let rtt = Time::from_millis(100);
        let s = AckSample { pkts_acked: 1, rtt: Some(rtt), in_flight: 64 };
        for _ in 0..4 {
            tp.now += Time::from_millis(5);
            c.pkts_acked(&mut tp, &s);
        }
        // New round: ACKs 1 ms apart (<= 2 ms) form a train; without pacing
        // it ends slow start once it lasts longer than delay_min / 2.
        next_round(&mut tp);
        tp.now += Time::from_millis(5);
        c.pkts_acked(&mut tp, &s); // round_start here
        for i in 1..=51 {
            tp.now += Time::from_millis(1);
            c.pkts_acked(&mut tp, &s);
            assert_eq!(tp.snd_ssthresh == 64, i == 51, "ack {i} ms into the train");
        }
    }

    #[test]
    fn hystart_ack_train_threshold_adds_gso_cushion_from_pacing_rate() {
        // hystart_ack_delay(): min(1 ms, 4 * 64 KiB at the pacing rate).
        let mut tp = conn(64, TCP_INFINITE_SSTHRESH);
        assert_eq!(Cubic::hystart_ack_delay(&tp), 0);
        tp.pacing_rate = crate::units::Rate::from_gbps(10);
        assert_eq!(Cubic::hystart_ack_delay(&tp), 209);
        tp.pacing_rate = crate::units::Rate::from_mbps(100);
        assert_eq!(Cubic::hystart_ack_delay(&tp), 1000);
    }

    #[test]
    fn hystart_inactive_below_low_window() {
        let mut c = Cubic::new();
        let mut tp = conn(15, TCP_INFINITE_SSTHRESH);
        c.init(&mut tp);
        for i in 0..40u64 {
            tp.now += Time::from_millis(1);
            let rtt = Time::from_millis(100 + 10 * i);
            c.pkts_acked(&mut tp, &AckSample { pkts_acked: 1, rtt: Some(rtt), in_flight: 15 });
        }
        assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        assert_eq!(c.delay_min, 100_000, "delay_min is still tracked");
    }

    #[test]
    fn delay_samples_discarded_within_one_second_of_epoch_start() {
        let (mut c, mut tp) = after_loss(100, Time::from_millis(50));
        ack(&mut c, &mut tp, Time::from_millis(50)); // epoch starts
        let start = tp.now;
        tp.now = start + Time::from_millis(999);
        c.pkts_acked(&mut tp, &AckSample { rtt: Some(Time::from_millis(20)), ..Default::default() });
        assert_eq!(c.delay_min, 50_000);
        tp.now = start + Time::from_millis(1000);
        c.pkts_acked(&mut tp, &AckSample { rtt: Some(Time::from_millis(20)), ..Default::default() });
        assert_eq!(c.delay_min, 20_000);
    }

    #[test]
    fn tx_start_after_idle_shifts_epoch_start_by_idle_time() {
        let rtt = Time::from_millis(100);
        let (mut c, mut tp) = after_loss(1000, rtt);
        run_until(&mut c, &mut tp, rtt, Time::from_secs(3));
        let epoch = c.epoch_start.unwrap();
        let cwnd = tp.snd_cwnd;
        tp.lsndtime = tp.now; // the last send (tcp_event_data_sent)
        tp.now = Time::from_secs(13); // 10 s idle since that send
        c.cwnd_event(&mut tp, CwndEvent::TxStart);
        assert_eq!(c.epoch_start, Some(epoch + 10_000));
        // Growth resumes on the curve where it left off, not 10 s later.
        run_until(&mut c, &mut tp, rtt, Time::from_millis(13_300));
        assert!(tp.snd_cwnd < cwnd + 20, "{} after idle from {cwnd}", tp.snd_cwnd);
        // Other events leave the epoch alone.
        tp.now = Time::from_secs(30);
        c.cwnd_event(&mut tp, CwndEvent::CwndRestart);
        assert_eq!(c.epoch_start, Some(epoch + 10_000));
    }

    #[test]
    fn loss_state_resets_w_max_epoch_and_hystart() {
        let (mut c, mut tp) = after_loss(1000, Time::from_millis(100));
        ack(&mut c, &mut tp, Time::from_millis(100));
        c.found = true;
        tp.now = Time::from_secs(7);
        c.set_state(&mut tp, CaState::Recovery);
        assert_eq!(c.last_max_cwnd, 1000, "only Loss resets");
        c.set_state(&mut tp, CaState::Loss);
        assert_eq!(c.last_max_cwnd, 0);
        assert_eq!(c.epoch_start, None);
        assert_eq!(c.delay_min, 0);
        assert!(!c.found);
        assert_eq!(c.round_start, 7_000_000);
    }

    #[test]
    fn undo_restores_prior_cwnd_like_reno() {
        let mut c = Cubic::new();
        let mut tp = conn(70, 70);
        tp.prior_cwnd = 100;
        assert_eq!(c.undo_cwnd(&mut tp), 100);
        tp.prior_cwnd = 50;
        assert_eq!(c.undo_cwnd(&mut tp), 70);
    }

    #[test]
    fn cnt_recomputed_at_most_32_times_per_second_when_cwnd_unchanged() {
        let mut c = Cubic::new();
        let mut tp = conn(1000, 10);
        tp.snd_cwnd_cnt = 0;
        c.cong_avoid(&mut tp, 1);
        let t = c.last_time;
        tp.now = Time::from_millis(31);
        tp.snd_cwnd = 1000;
        c.update(1000, 1, tp.now);
        assert_eq!(c.last_time, t, "within HZ/32");
        tp.now = Time::from_millis(32);
        c.update(1000, 1, tp.now);
        assert_eq!(c.last_time, 32);
    }

    #[test]
    fn cubictcp_register_derives_its_scales_from_beta_and_bic_scale() {
        let r = Registered::default();
        assert_eq!((r.beta_scale, r.cube_rtt_scale, r.cube_factor), (15, 410, (1u64 << 40) / 410));
        let mut c = Cubic::with_params(CubicParams { beta: 512, ..CubicParams::default() });
        c.init(&mut conn(100, TCP_INFINITE_SSTHRESH));
        assert_eq!(c.registered.beta_scale, 8 * (1024 + 512) / 3 / 512);
        assert_eq!(c.ssthresh(&conn(100, 50)), 50, "beta 512/1024 halves cwnd");
        assert_eq!(c.params.beta, 512, "bictcp_reset keeps the module parameters");
    }
}
