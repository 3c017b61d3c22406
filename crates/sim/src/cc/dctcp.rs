//! DCTCP (RFC 8257) as Linux implements it in net/ipv4/tcp_dctcp.c.
//!
//! The sender keeps `alpha`, a moving average of the fraction of segments
//! delivered with ECN-Echo, updated once per window of data
//! (dctcp_update_alpha, from tp->delivered and tp->delivered_ce), and on
//! ECN-Echo reduces cwnd by alpha/2 (dctcp_ssthresh, reached through the
//! stack's tcp_enter_cwr and PRR like any reduction). Losses halve cwnd as
//! Reno (dctcp_react_to_loss); growth is Reno's (tcp_reno_cong_avoid).
//! Without ECN the connection falls back to Reno (dctcp_init's
//! `dctcp_reno` ops). The receiver half (dctcp_ece_ack_update: ECE mirrors
//! the CE state of the last segment, with an immediate ACK when it flips)
//! is in tcp/ecn.rs. The PLB (protective load balancing) hooks rehash a
//! flow's path; the simulated path has one route, so they are left out.

use super::{reno::Reno, CaState, CcInfo, ConnState, CongestionControl, CwndEvent};

/// DCTCP_MAX_ALPHA: alpha is kept in 1/1024.
pub const DCTCP_MAX_ALPHA: u32 = 1024;

/// tcp_dctcp.c's module parameters (`module_param`), with Linux's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DctcpParams {
    /// `dctcp_shift_g`: the moving average's gain g = 1/2^shift_g (1/16).
    pub shift_g: u32,
    /// `dctcp_alpha_on_init`: alpha at the start, in 1/1024 (1024: 1).
    pub alpha_on_init: u32,
}

impl Default for DctcpParams {
    fn default() -> DctcpParams {
        DctcpParams { shift_g: 4, alpha_on_init: DCTCP_MAX_ALPHA }
    }
}

/// `struct dctcp` (without the PLB state).
#[derive(Debug, Clone)]
pub struct Dctcp {
    params: DctcpParams,
    /// tp->delivered and tp->delivered_ce at the start of the window.
    old_delivered: u64,
    old_delivered_ce: u64,
    /// ca->dctcp_alpha, in 1/1024.
    alpha: u32,
    /// snd_nxt when the window started: it ends once snd_una reaches it.
    next_seq: u64,
    /// ca->loss_cwnd: cwnd at the last reduction, for undo.
    loss_cwnd: u32,
    /// ECN was not negotiated: the connection runs `dctcp_reno`.
    reno_fallback: bool,
}

impl Default for Dctcp {
    fn default() -> Self {
        Dctcp::new()
    }
}

impl Dctcp {
    pub fn new() -> Dctcp {
        Dctcp::with_params(DctcpParams::default())
    }

    /// DCTCP with the given module parameters.
    pub fn with_params(params: DctcpParams) -> Dctcp {
        Dctcp {
            params,
            old_delivered: 0,
            old_delivered_ce: 0,
            alpha: params.alpha_on_init.min(DCTCP_MAX_ALPHA),
            next_seq: 0,
            loss_cwnd: 0,
            reno_fallback: false,
        }
    }

    /// ca->dctcp_alpha in 1/1024.
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// dctcp_reset(): a new observation window starts at snd_nxt.
    fn reset(&mut self, tp: &ConnState) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered = tp.delivered;
        self.old_delivered_ce = tp.delivered_ce;
    }

    /// dctcp_update_alpha(): once snd_una passes the window's end,
    /// alpha = (1 - g) * alpha + g * F with F the fraction of segments
    /// delivered by ECE-marked ACKs over the window.
    fn update_alpha(&mut self, tp: &ConnState) {
        if tp.snd_una < self.next_seq {
            return; // !before(tp->snd_una, ca->next_seq) not yet
        }
        let delivered = tp.delivered.saturating_sub(self.old_delivered);
        let mut delivered_ce = tp.delivered_ce.saturating_sub(self.old_delivered_ce);
        let mut alpha = self.alpha;
        // alpha -= min_not_zero(alpha, alpha >> dctcp_shift_g): the decay
        // takes alpha to 0 once alpha >> g is 0.
        let decay = alpha >> self.params.shift_g;
        alpha -= if decay == 0 { alpha } else { decay.min(alpha) };
        if delivered_ce > 0 {
            // g * F in 1/1024: (delivered_ce << (10 - g)) / delivered.
            delivered_ce <<= 10 - self.params.shift_g;
            delivered_ce /= delivered.max(1);
            alpha = (alpha as u64 + delivered_ce).min(DCTCP_MAX_ALPHA as u64) as u32;
        }
        self.alpha = alpha;
        self.reset(tp);
    }

    /// dctcp_react_to_loss(): a loss halves cwnd as Reno.
    fn react_to_loss(&mut self, tp: &mut ConnState) {
        self.loss_cwnd = tp.snd_cwnd;
        tp.snd_ssthresh = (tp.snd_cwnd >> 1).max(2);
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    /// dctcp_init(): with ECN negotiated, alpha = dctcp_alpha_on_init and a
    /// window starts; without it, fall back to Reno (`dctcp_reno`).
    fn init(&mut self, tp: &mut ConnState) {
        if tp.ecn_ok {
            self.alpha = self.params.alpha_on_init.min(DCTCP_MAX_ALPHA);
            self.loss_cwnd = 0;
            self.reset(tp);
        } else {
            self.reno_fallback = true;
        }
    }

    /// dctcp_ssthresh(): cwnd × (1 − alpha/2), at least 2; dctcp_reno uses
    /// tcp_reno_ssthresh.
    fn ssthresh(&mut self, tp: &ConnState) -> u32 {
        if self.reno_fallback {
            return Reno.ssthresh(tp);
        }
        self.loss_cwnd = tp.snd_cwnd;
        let cut = ((tp.snd_cwnd as u64 * self.alpha as u64) >> 11) as u32;
        tp.snd_cwnd.saturating_sub(cut).max(2)
    }

    /// `.cong_avoid = tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut ConnState, acked: u32) {
        Reno.cong_avoid(tp, acked);
    }

    /// dctcp_state(): entering Recovery reacts to the loss as Reno (an RTO
    /// is handled in dctcp_cwnd_event, once per episode).
    fn set_state(&mut self, tp: &mut ConnState, new_state: CaState) {
        if self.reno_fallback {
            return;
        }
        if new_state == CaState::Recovery && new_state != tp.ca_state {
            self.react_to_loss(tp);
        }
    }

    /// dctcp_cwnd_event(): CA_EVENT_LOSS (an RTO) reacts as Reno. The
    /// receiver's CA_EVENT_ECN_IS_CE / _NO_CE are tcp/ecn.rs's.
    fn cwnd_event(&mut self, tp: &mut ConnState, ev: CwndEvent) {
        if !self.reno_fallback && ev == CwndEvent::Loss {
            self.react_to_loss(tp);
        }
    }

    /// `.in_ack_event = dctcp_update_alpha`.
    fn in_ack_event(&mut self, tp: &mut ConnState, _flags: u32) {
        if !self.reno_fallback {
            self.update_alpha(tp);
        }
    }

    /// dctcp_cwnd_undo(): max(cwnd, loss_cwnd); dctcp_reno uses
    /// tcp_reno_undo_cwnd.
    fn undo_cwnd(&mut self, tp: &mut ConnState) -> u32 {
        if self.reno_fallback {
            tp.snd_cwnd.max(tp.prior_cwnd)
        } else {
            tp.snd_cwnd.max(self.loss_cwnd)
        }
    }

    /// `.flags = TCP_CONG_NEEDS_ECN` (not on the dctcp_reno fallback).
    fn needs_ecn(&self) -> bool {
        !self.reno_fallback
    }

    /// dctcp_get_info().
    fn get_info(&self) -> Option<CcInfo> {
        Some(CcInfo::Dctcp { enabled: !self.reno_fallback, alpha: self.alpha })
    }

    /// The ops in use: `dctcp`, or `dctcp-reno` after the fallback.
    /// DCTCP's cong_avoid is Reno's either way; `reno` names the fallback
    /// (no ECN: dctcp_ssthresh() becomes tcp_reno_ssthresh()).
    fn state_label(&self, tp: &ConnState) -> &'static str {
        tp.window_label(if self.reno_fallback { "reno" } else { "cong_avoid" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ecn_conn(cwnd: u32) -> ConnState {
        let mut tp = ConnState::new(1448);
        tp.ecn_ok = true;
        tp.snd_cwnd = cwnd;
        tp
    }

    /// One window of `n` delivered segments, `ce` of them by ECE ACKs, then
    /// the ACK that ends it.
    fn window(d: &mut Dctcp, tp: &mut ConnState, n: u64, ce: u64) {
        tp.snd_nxt += n;
        tp.delivered += n;
        tp.delivered_ce += ce;
        tp.snd_una = tp.snd_nxt;
        d.in_ack_event(tp, 0);
    }

    #[test]
    fn dctcp_alpha_starts_at_one() {
        let mut d = Dctcp::new();
        let mut tp = ecn_conn(10);
        d.init(&mut tp);
        assert_eq!(d.alpha(), DCTCP_MAX_ALPHA);
    }

    #[test]
    fn dctcp_update_alpha_decays_by_g_per_window_without_marks() {
        let mut d = Dctcp::new();
        let mut tp = ecn_conn(10);
        d.init(&mut tp);
        window(&mut d, &mut tp, 100, 0);
        assert_eq!(d.alpha(), 1024 - 1024 / 16);
        window(&mut d, &mut tp, 100, 0);
        assert_eq!(d.alpha(), 960 - 960 / 16);
    }

    #[test]
    fn dctcp_update_alpha_waits_for_the_window_to_end() {
        let mut d = Dctcp::new();
        let mut tp = ecn_conn(10);
        d.init(&mut tp);
        tp.snd_nxt = 100;
        d.in_ack_event(&mut tp, 0); // ends the empty first window
        assert_eq!(d.alpha(), 960);
        tp.delivered = 50;
        tp.snd_una = 50; // half the window acked: no update
        d.in_ack_event(&mut tp, 0);
        assert_eq!(d.alpha(), 960);
    }

    #[test]
    fn dctcp_alpha_converges_to_the_marked_fraction_with_g_one_sixteenth() {
        let mut d = Dctcp::new();
        let mut tp = ecn_conn(10);
        d.init(&mut tp);
        for _ in 0..200 {
            window(&mut d, &mut tp, 100, 25); // F = 1/4
        }
        // Fixed point of alpha -= alpha >> 4; alpha += (25 << 6) / 100 = 16:
        // alpha >> 4 = 16, i.e. 256 <= alpha < 272 (F = 256/1024).
        assert!((256..272).contains(&d.alpha()), "{}", d.alpha());
        for _ in 0..300 {
            window(&mut d, &mut tp, 100, 0);
        }
        assert_eq!(d.alpha(), 0, "decays to zero without marks");
    }

    #[test]
    fn dctcp_ssthresh_is_cwnd_times_one_minus_half_alpha() {
        let mut d = Dctcp::new();
        let mut tp = ecn_conn(100);
        d.init(&mut tp);
        assert_eq!(d.ssthresh(&tp), 50, "alpha = 1 halves");
        d.alpha = 512;
        assert_eq!(d.ssthresh(&tp), 75);
        d.alpha = 0;
        assert_eq!(d.ssthresh(&tp), 100);
        tp.snd_cwnd = 2;
        d.alpha = 1024;
        assert_eq!(d.ssthresh(&tp), 2, "at least 2");
    }

    #[test]
    fn dctcp_loss_halves_as_reno_on_entering_recovery_and_undo_restores_loss_cwnd() {
        let mut d = Dctcp::new();
        let mut tp = ecn_conn(100);
        d.init(&mut tp);
        d.alpha = 100;
        tp.snd_ssthresh = d.ssthresh(&tp); // tcp_init_cwnd_reduction
        d.set_state(&mut tp, CaState::Recovery); // dctcp_state
        assert_eq!(tp.snd_ssthresh, 50);
        tp.snd_cwnd = 50;
        assert_eq!(d.undo_cwnd(&mut tp), 100);
        tp.snd_cwnd = 80;
        d.cwnd_event(&mut tp, CwndEvent::Loss);
        assert_eq!(tp.snd_ssthresh, 40);
    }

    #[test]
    fn dctcp_without_ecn_falls_back_to_reno() {
        let mut d = Dctcp::new();
        let mut tp = ConnState::new(1448);
        tp.snd_cwnd = 100;
        d.init(&mut tp);
        assert_eq!(d.state_label(&ConnState { snd_ssthresh: 2, ..tp.clone() }), "reno");
        assert!(!d.needs_ecn());
        assert_eq!(d.ssthresh(&tp), 50);
        tp.ca_state = CaState::Open;
        tp.snd_ssthresh = 77;
        d.set_state(&mut tp, CaState::Recovery);
        assert_eq!(tp.snd_ssthresh, 77, "dctcp_reno has no set_state");
    }

    #[test]
    fn dctcp_init_starts_alpha_at_dctcp_alpha_on_init() {
        let mut d = Dctcp::with_params(DctcpParams { alpha_on_init: 512, ..DctcpParams::default() });
        let mut tp = ecn_conn(100);
        d.init(&mut tp);
        assert_eq!(d.alpha(), 512);
        assert_eq!(Dctcp::new().alpha(), DCTCP_MAX_ALPHA);
    }
}
