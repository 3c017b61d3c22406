//! TCP-NV ("New Vegas", Brakmo, Linux Plumbers 2015) as Linux implements
//! it in net/ipv4/tcp_nv.c: a successor of Vegas for data centres. Per ACK
//! it samples the delivery rate (bytes delivered since the acked packet
//! was sent, over a 1/2-averaged RTT); once per RTT, with enough samples,
//! it compares cwnd with the window the round's best rate needs at the
//! minimum RTT plus `nv_pad` segments: above it cwnd drops by 30 % of the
//! excess, well below it cwnd may grow (Reno-like, slower after an RTO).
//! The minimum RTT is re-learned every ~`nv_reset_period` seconds. A loss
//! cuts cwnd to 80 %. The module parameters are [`NvParams`], with Linux's
//! defaults. Time in jiffies (`cc::jiffies`), RTTs in µs, rates in 100s of
//! bit/s, sequence numbers in segments (Linux's bytes / mss_cache).

use super::prandom::Prandom;
use super::jiffies::{jiffies, HZ};
use super::{AckSample, CaState, CcInfo, ConnState, CongestionControl};

/// NV_INIT_RTT: "no RTT yet".
pub const NV_INIT_RTT: u32 = u32::MAX;
/// NV_MIN_CWND: the starting (and lowest) ca->nv_min_cwnd.
pub const NV_MIN_CWND: u8 = 4;
/// NV_MIN_CWND_GROW: ca->nv_min_cwnd's step when an RTT has one sample.
pub const NV_MIN_CWND_GROW: u8 = 2;
/// NV_TSO_CWND_BOUND: ca->nv_min_cwnd stays at most one above this.
pub const NV_TSO_CWND_BOUND: u8 = 80;

/// tcp_nv.c's module parameters, with Linux's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NvParams {
    /// `nv_pad`: queued segments allowed in the network.
    pub pad: u32,
    /// `nv_pad_buffer`: do not grow cwnd within this many of nv_pad.
    pub pad_buffer: u32,
    /// `nv_reset_period`: seconds between min-RTT resets (±1/4, random).
    pub reset_period_s: u32,
    /// `nv_min_cwnd`: NV does not decrease cwnd below this without losses.
    pub min_cwnd: u32,
    /// `nv_cong_dec_mult`: decrease by this/128 of the excess (30 %).
    pub cong_dec_mult: u32,
    /// `nv_ssthresh_factor`: on congestion ssthresh = this · max_win / 8.
    pub ssthresh_factor: u32,
    /// `nv_rtt_factor`: RTT averaging, new sample weight in 1/256.
    pub rtt_factor: u32,
    /// `nv_loss_dec_factor`: on loss cwnd · this / 1024 (80 %).
    pub loss_dec_factor: u32,
    /// `nv_cwnd_growth_rate_neg`: no-congestion RTTs before the growth
    /// rate doubles while below 1 segment per RTT.
    pub cwnd_growth_rate_neg: u32,
    /// `nv_cwnd_growth_rate_pos`: the same at 1 segment per RTT or more
    /// (0: fixed, like Reno).
    pub cwnd_growth_rate_pos: u32,
    /// `nv_dec_eval_min_calls`: samples before a decrease.
    pub dec_eval_min_calls: u32,
    /// `nv_inc_eval_min_calls`: samples before allowing growth.
    pub inc_eval_min_calls: u32,
    /// `nv_ssthresh_eval_min_calls`: samples before leaving slow start.
    pub ssthresh_eval_min_calls: u32,
    /// `nv_stop_rtt_cnt`: stop growing after this many undecided RTTs.
    pub stop_rtt_cnt: u32,
    /// `nv_rtt_min_cnt`: RTTs before a congestion decision.
    pub rtt_min_cnt: u32,
}

impl Default for NvParams {
    fn default() -> NvParams {
        NvParams {
            pad: 10,
            pad_buffer: 2,
            reset_period_s: 5,
            min_cwnd: 2,
            cong_dec_mult: 30 * 128 / 100,
            ssthresh_factor: 8,
            rtt_factor: 128,
            loss_dec_factor: 819,
            cwnd_growth_rate_neg: 8,
            cwnd_growth_rate_pos: 0,
            dec_eval_min_calls: 60,
            inc_eval_min_calls: 20,
            ssthresh_eval_min_calls: 30,
            stop_rtt_cnt: 10,
            rtt_min_cnt: 2,
        }
    }
}

/// `struct tcpnv`.
#[derive(Debug, Clone)]
pub struct Nv {
    params: NvParams,
    /// Stand-in for get_random_bytes() (the reset period's jitter).
    rng: Prandom,
    /// Jiffies at which nv_min_rtt_new becomes nv_min_rtt.
    min_rtt_reset_jiffies: u64,
    /// Growth rate: < 0 is less than one segment per RTT.
    cwnd_growth_factor: i8,
    allow_cwnd_growth: bool,
    /// Reset the round state when Open is next entered (after a loss).
    reset: bool,
    /// Growing back after a temporary decrease (never set in Linux today).
    catchup: bool,
    /// Samples since the last decision.
    eval_call_cnt: u8,
    /// NV makes no decision below this cwnd (grows for TSO/LRO).
    nv_min_cwnd: u8,
    /// RTTs without a decision.
    rtt_cnt: u8,
    /// Averaged RTT, µs.
    last_rtt: u32,
    /// Active min RTT, µs: sets the slope.
    min_rtt: u32,
    /// Min RTT collected for the next period, µs.
    min_rtt_new: u32,
    /// From a BPF program in Linux (BPF_SOCK_OPS_BASE_RTT); 0 here.
    base_rtt: u32,
    /// 80 % of base_rtt; 0 here.
    lower_bound_rtt: u32,
    /// Highest rate sampled this round, 100s of bit/s.
    rtt_max_rate: u32,
    /// The round ends when snd_una passes this (segments).
    rtt_start_seq: u64,
    /// snd_una at the last sample (segments).
    last_snd_una: u64,
    /// Consecutive no-congestion decisions.
    no_cong_cnt: u32,
}

impl Nv {
    /// NV with Linux's parameters and `seed` for the reset jitter.
    pub fn with_seed(seed: u64) -> Nv {
        Nv::with_params(NvParams::default(), seed)
    }

    /// NV with the given module parameters.
    pub fn with_params(params: NvParams, seed: u64) -> Nv {
        Nv {
            params,
            rng: Prandom::new(seed),
            min_rtt_reset_jiffies: 0,
            cwnd_growth_factor: 0,
            allow_cwnd_growth: true,
            reset: false,
            catchup: false,
            eval_call_cnt: 0,
            nv_min_cwnd: NV_MIN_CWND,
            rtt_cnt: 0,
            last_rtt: 0,
            min_rtt: NV_INIT_RTT,
            min_rtt_new: NV_INIT_RTT,
            base_rtt: 0,
            lower_bound_rtt: 0,
            rtt_max_rate: 0,
            rtt_start_seq: 0,
            last_snd_una: 0,
            no_cong_cnt: 0,
        }
    }

    /// The active minimum RTT, µs.
    pub fn min_rtt_us(&self) -> u32 {
        self.min_rtt
    }

    /// tcpnv_reset(): a fresh round from snd_una.
    fn nv_reset(&mut self, tp: &ConnState) {
        self.reset = false;
        self.no_cong_cnt = 0;
        self.rtt_cnt = 0;
        self.last_rtt = 0;
        self.rtt_max_rate = 0;
        self.rtt_start_seq = tp.snd_una;
        self.eval_call_cnt = 0;
        self.last_snd_una = tp.snd_una;
    }

    /// nv_get_bounded_rtt(): the BPF-provided bounds, if any.
    fn bounded_rtt(&self, val: u32) -> u32 {
        if self.lower_bound_rtt > 0 && val < self.lower_bound_rtt {
            self.lower_bound_rtt
        } else if self.base_rtt > 0 && val > self.base_rtt {
            self.base_rtt
        } else {
            val
        }
    }

    /// The once-per-RTT decision of tcpnv_acked(), after the round
    /// ended. `acked_segs` is what this ACK advanced snd_una by.
    fn decide(&mut self, tp: &mut ConnState, acked_segs: u64) {
        let p = self.params;
        self.rtt_start_seq = tp.snd_nxt;
        self.rtt_cnt = self.rtt_cnt.saturating_add(1); // at most 0xff
        // One sample in the RTT: cwnd is too small to measure (TSO, LRO,
        // interrupt coalescence): raise nv_min_cwnd and skip ahead.
        if self.eval_call_cnt == 1
            && acked_segs >= (self.nv_min_cwnd as u64).saturating_sub(1)
            && self.nv_min_cwnd < NV_TSO_CWND_BOUND + 1
        {
            self.nv_min_cwnd = (self.nv_min_cwnd + NV_MIN_CWND_GROW).min(NV_TSO_CWND_BOUND + 1);
            self.rtt_start_seq = tp.snd_nxt + self.nv_min_cwnd as u64;
            self.eval_call_cnt = 0;
            self.allow_cwnd_growth = true;
            return;
        }
        // The ideal cwnd for the round's best rate: rate / slope, with
        // slope = 80000 · mss / min_rtt; max_win adds nv_pad.
        let cwnd_by_slope =
            (self.rtt_max_rate as u64 * self.min_rtt as u64 / (80_000 * tp.mss_bytes.max(1) as u64)) as u32;
        let max_win = cwnd_by_slope.saturating_add(p.pad);
        let cwnd = tp.snd_cwnd;
        let calls = self.eval_call_cnt as u32;
        if cwnd > max_win {
            // Congestion: decide only with nv_rtt_min_cnt RTTs and enough
            // samples (fewer needed to leave slow start).
            if (self.rtt_cnt as u32) < p.rtt_min_cnt {
                return;
            } else if tp.snd_ssthresh == super::TCP_INFINITE_SSTHRESH {
                if calls < p.ssthresh_eval_min_calls {
                    return;
                }
            } else if calls < p.dec_eval_min_calls {
                if self.allow_cwnd_growth && self.rtt_cnt as u32 > p.stop_rtt_cnt {
                    self.allow_cwnd_growth = false;
                }
                return;
            }
            self.allow_cwnd_growth = false;
            tp.snd_ssthresh = (p.ssthresh_factor.saturating_mul(max_win)) >> 3;
            if cwnd - max_win > 2 {
                // Exponential decrease: 30 % of the excess, at least 2.
                let dec = (((cwnd - max_win) as u64 * p.cong_dec_mult as u64) >> 7).max(2) as u32;
                tp.snd_cwnd = cwnd.saturating_sub(dec);
            } else if p.cong_dec_mult > 0 {
                tp.snd_cwnd = max_win;
            }
            if self.cwnd_growth_factor > 0 {
                self.cwnd_growth_factor = 0;
            }
            self.no_cong_cnt = 0;
        } else if cwnd <= max_win.saturating_sub(p.pad_buffer) {
            // No congestion: allow growth once there are enough samples.
            if calls < p.inc_eval_min_calls {
                return;
            }
            self.allow_cwnd_growth = true;
            self.no_cong_cnt += 1;
            if self.cwnd_growth_factor < 0 && p.cwnd_growth_rate_neg > 0 && self.no_cong_cnt > p.cwnd_growth_rate_neg {
                self.cwnd_growth_factor += 1;
                self.no_cong_cnt = 0;
            } else if self.cwnd_growth_factor >= 0
                && p.cwnd_growth_rate_pos > 0
                && self.no_cong_cnt > p.cwnd_growth_rate_pos
            {
                self.cwnd_growth_factor = self.cwnd_growth_factor.saturating_add(1);
                self.no_cong_cnt = 0;
            }
        } else {
            // In between: nothing to do.
            return;
        }
        self.eval_call_cnt = 0;
        self.rtt_cnt = 0;
        self.rtt_max_rate = 0;
        // NV's decrease never takes cwnd below nv_min_cwnd.
        if tp.snd_cwnd < p.min_cwnd {
            tp.snd_cwnd = p.min_cwnd;
        }
    }
}

impl CongestionControl for Nv {
    fn name(&self) -> &'static str {
        "nv"
    }

    /// tcpnv_init(): no BPF base RTT; min RTT first reset after 2 s.
    fn init(&mut self, tp: &mut ConnState) {
        let (params, rng) = (self.params, self.rng.clone());
        *self = Nv { rng, ..Nv::with_params(params, 0) };
        self.nv_reset(tp);
        self.min_rtt_reset_jiffies = jiffies(tp.now) + 2 * HZ;
    }

    /// tcpnv_recalc_ssthresh(): cwnd · 819/1024 (80 %), at least 2.
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        (((tp.snd_cwnd as u64 * self.params.loss_dec_factor as u64) >> 10) as u32).max(2)
    }

    /// tcpnv_cong_avoid(): only when cwnd-limited and NV allows growth;
    /// slow start, then tcp_cong_avoid_ai with cwnd << -factor (slower)
    /// or max(4, cwnd >> factor).
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        if !tp.is_cwnd_limited || !self.allow_cwnd_growth {
            return;
        }
        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tp.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let cnt = if self.cwnd_growth_factor < 0 {
            tp.snd_cwnd.checked_shl((-self.cwnd_growth_factor) as u32).unwrap_or(u32::MAX)
        } else {
            (tp.snd_cwnd >> self.cwnd_growth_factor as u32).max(4)
        };
        tp.cong_avoid_ai(cnt, acked);
    }

    /// tcpnv_state(): back in Open after a loss, reset the round; entering
    /// CWR/Recovery/Loss stops growth, and an RTO also resets a positive
    /// growth factor to Reno's and lowers it (to at most -8).
    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        if new_state == CaState::Open && self.reset {
            self.nv_reset(tp);
        } else if matches!(new_state, CaState::Loss | CaState::Cwr | CaState::Recovery) {
            self.reset = true;
            self.allow_cwnd_growth = false;
            if new_state == CaState::Loss {
                if self.cwnd_growth_factor > 0 {
                    self.cwnd_growth_factor = 0;
                }
                if self.params.cwnd_growth_rate_neg > 0 && self.cwnd_growth_factor > -8 {
                    self.cwnd_growth_factor -= 1;
                }
            }
        }
    }

    /// tcpnv_acked(): per ACK with an RTT sample in Open/Disorder, the
    /// 1/2-averaged RTT, the rate in_flight · 80000 / avg_rtt (100s of
    /// bit/s), the round's max rate, the min RTTs (the active one swapped
    /// for the new one every 3/4..5/4 of nv_reset_period), and at the end
    /// of each round the decision.
    fn pkts_acked(&mut self, tp: &mut ConnState, sample: &AckSample) {
        let p = self.params;
        let Some(rtt) = sample.rtt else { return };
        if !matches!(tp.ca_state, CaState::Open | CaState::Disorder) {
            return;
        }
        if self.catchup && tp.snd_cwnd >= p.min_cwnd {
            self.catchup = false;
            self.allow_cwnd_growth = false;
        }
        let acked_segs = tp.snd_una.saturating_sub(self.last_snd_una);
        self.last_snd_una = tp.snd_una;
        if sample.in_flight == 0 {
            return;
        }
        let rtt_us = rtt.as_micros().min(i32::MAX as u64) as u32;
        let mut avg_rtt = if p.rtt_factor > 0 {
            let avg = if self.last_rtt > 0 {
                ((rtt_us as u64 * p.rtt_factor as u64 + self.last_rtt as u64 * (256 - p.rtt_factor as u64)) >> 8)
                    as u32
            } else {
                self.min_rtt = rtt_us << 1;
                rtt_us
            };
            self.last_rtt = avg;
            avg
        } else {
            rtt_us
        };
        let rate = (sample.in_flight as u64 * 80_000 / avg_rtt.max(1) as u64) as u32;
        self.rtt_max_rate = self.rtt_max_rate.max(rate);
        self.eval_call_cnt = self.eval_call_cnt.saturating_add(1); // at most 255
        avg_rtt = self.bounded_rtt(avg_rtt);
        self.min_rtt = self.min_rtt.min(avg_rtt);
        self.min_rtt_new = self.min_rtt_new.min(avg_rtt);
        let now = jiffies(tp.now);
        if now >= self.min_rtt_reset_jiffies {
            self.min_rtt = self.min_rtt_new;
            self.min_rtt_new = NV_INIT_RTT;
            let rand = self.rng.u32_max(256) as u64;
            self.min_rtt_reset_jiffies = now + ((p.reset_period_s as u64 * (384 + rand) * HZ) >> 9);
            // Every so often lower nv_min_cwnd in case it is stale.
            self.nv_min_cwnd = (self.nv_min_cwnd / 2).max(NV_MIN_CWND);
        }
        if self.rtt_start_seq < tp.snd_una {
            self.decide(tp, acked_segs);
        }
    }

    /// tcpnv_get_info().
    fn get_info(&self) -> Option<CcInfo> {
        Some(CcInfo::Vegas {
            enabled: true,
            rttcnt: self.rtt_cnt as u32,
            rtt_us: self.last_rtt,
            minrtt_us: self.min_rtt,
        })
    }

    /// tcpnv_cong_avoid() returns before slow start while growth is not
    /// allowed, so `no_growth` comes first.
    fn state_label(&self, tp: &ConnState) -> &'static str {
        if self.allow_cwnd_growth {
            tp.window_label("grow")
        } else {
            "no_growth"
        }
    }
}

#[cfg(test)]
#[path = "nv_tests.rs"]
mod tests;
