//! ECN (RFC 3168) as Linux's TCP does it: the codepoints a data segment
//! carries, and the receiver's half — ECE echoed until CWR arrives
//! (tcp_ecn_accept_cwr, __tcp_ecn_check_ce, tcp_ecn_send) or, for an
//! algorithm that needs ECN (DCTCP), ECE mirroring the CE state of the last
//! segment with an immediate ACK when it flips (dctcp_ece_ack_update in
//! include/net/tcp_dctcp.h). The sender's half (ECT and CWR on new data,
//! the CWR reduction on ECE) is in sender.rs and ack.rs.
//!
//! Negotiation (tcp_ecn_send_syn, tcp_ecn_create_request) is settled
//! before the run, from net.ipv4.tcp_ecn of both hosts: see [`negotiate`].

/// The IP header's ECN field (INET_ECN_*); ECT(1) is never sent by Linux's
/// classic ECN and is not modelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Codepoint {
    #[default]
    NotEct,
    Ect0,
    Ce,
}

/// What a data segment carries of ECN: its IP codepoint and the TCP CWR
/// flag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegEcn {
    pub codepoint: Codepoint,
    pub cwr: bool,
}

impl SegEcn {
    /// A segment without ECN (what every segment of a non-ECN flow is).
    pub const NOT_ECT: SegEcn = SegEcn { codepoint: Codepoint::NotEct, cwr: false };

    #[inline]
    pub fn is_ect(self) -> bool {
        self.codepoint != Codepoint::NotEct
    }
}

/// net.ipv4.tcp_ecn: 0 off, 1 request and accept, 2 accept only (the
/// default).
pub const TCP_ECN_OFF: u8 = 0;
pub const TCP_ECN_ON: u8 = 1;
pub const TCP_ECN_PASSIVE: u8 = 2;

/// Whether a connection negotiates ECN. The sender requests it in its SYN
/// when its tcp_ecn is 1 or its algorithm needs ECN (tcp_ecn_send_syn:
/// `sysctl_tcp_ecn == 1 || tcp_ca_needs_ecn(sk)`); the receiver accepts
/// when its tcp_ecn is non-zero or its own algorithm needs ECN
/// (tcp_ecn_create_request). The simulated receiver runs the flow's
/// algorithm for its half (as DCTCP deployments configure every host), so
/// an algorithm that needs ECN is accepted whatever the receiver's tcp_ecn.
pub fn negotiate(sender_tcp_ecn: u8, receiver_tcp_ecn: u8, cc_needs_ecn: bool) -> bool {
    let requests = sender_tcp_ecn == TCP_ECN_ON || cc_needs_ecn;
    let accepts = receiver_tcp_ecn != TCP_ECN_OFF || cc_needs_ecn;
    requests && accepts
}

/// What the receiver must do after an arriving segment's ECN field was
/// examined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CeEffects {
    /// tcp_enter_quickack_mode(sk, 2).
    pub quickack: bool,
    /// ICSK_ACK_NOW: acknowledge this segment at once.
    pub ack_now: bool,
    /// DCTCP's ACK of the previous CE state, sent before anything else
    /// (__tcp_send_ack(sk, prior_rcv_nxt)): its cumulative ACK and ECE.
    pub lead_ack: Option<(u64, bool)>,
}

/// The receiver's ECN state (the receive-side bits of tp->ecn_flags, and
/// DCTCP's ce_state / prior_rcv_nxt).
#[derive(Clone, Debug, Default)]
pub struct RxEcn {
    /// TCP_ECN_OK: ECN was negotiated.
    pub ok: bool,
    /// The connection's algorithm needs ECN (tcp_ca_needs_ecn): ECE
    /// follows DCTCP's CE state machine.
    pub accurate: bool,
    /// TCP_ECN_DEMAND_CWR: ACKs carry ECE.
    pub demand_cwr: bool,
    /// TCP_ECN_SEEN: an ECT or CE segment has arrived.
    seen: bool,
    /// DCTCP's ca->ce_state: the last segment was CE.
    ce_state: bool,
    /// DCTCP's ca->prior_rcv_nxt.
    prior_rcv_nxt: u64,
}

impl RxEcn {
    pub fn new(ok: bool, accurate: bool) -> RxEcn {
        RxEcn { ok, accurate: ok && accurate, ..RxEcn::default() }
    }

    /// tcp_ecn_accept_cwr() (from tcp_data_queue()): CWR ends the echo, and
    /// a data segment carrying it is acknowledged at once ("its cwnd may
    /// be very low"). Returns whether to ACK now.
    #[inline]
    pub fn accept_cwr(&mut self, seg: SegEcn) -> bool {
        if self.ok && seg.cwr {
            self.demand_cwr = false;
            return true;
        }
        false
    }

    /// tcp_ecn_check_ce() → __tcp_ecn_check_ce(), from tcp_event_data_recv()
    /// (in-order data, `rcv_nxt` already advanced) or tcp_data_queue_ofo().
    /// `delack_pending` is ICSK_ACK_TIMER.
    #[inline]
    pub fn check_ce(&mut self, seg: SegEcn, rcv_nxt: u64, delack_pending: bool) -> CeEffects {
        let mut fx = CeEffects::default();
        if !self.ok {
            return fx;
        }
        match seg.codepoint {
            Codepoint::NotEct => {
                // "Insure that GCN will not continue to mark packets."
                fx.quickack = self.seen;
            }
            Codepoint::Ce => {
                if self.accurate {
                    self.ece_ack_update(true, rcv_nxt, delack_pending, &mut fx);
                }
                if !self.demand_cwr {
                    // "Better not delay acks, sender can have a very low cwnd".
                    fx.quickack = true;
                    self.demand_cwr = true;
                }
                self.seen = true;
            }
            Codepoint::Ect0 => {
                if self.accurate {
                    self.ece_ack_update(false, rcv_nxt, delack_pending, &mut fx);
                }
                self.seen = true;
            }
        }
        fx
    }

    /// dctcp_ece_ack_update() (CA_EVENT_ECN_IS_CE / _NO_CE): when the CE
    /// state flips, a delayed ACK is first sent with the prior state for
    /// the data before this segment, then this segment is ACKed at once;
    /// ECE then follows the new state (dctcp_ece_ack_cwr).
    fn ece_ack_update(&mut self, ce: bool, rcv_nxt: u64, delack_pending: bool, fx: &mut CeEffects) {
        if self.ce_state != ce {
            if delack_pending {
                fx.lead_ack = Some((self.prior_rcv_nxt, self.ce_state));
            }
            fx.ack_now = true;
        }
        self.prior_rcv_nxt = rcv_nxt;
        self.ce_state = ce;
        self.demand_cwr = ce;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ECT: SegEcn = SegEcn { codepoint: Codepoint::Ect0, cwr: false };
    const CE: SegEcn = SegEcn { codepoint: Codepoint::Ce, cwr: false };
    const ECT_CWR: SegEcn = SegEcn { codepoint: Codepoint::Ect0, cwr: true };

    #[test]
    fn negotiation_needs_a_request_and_an_acceptance() {
        assert!(negotiate(TCP_ECN_ON, TCP_ECN_PASSIVE, false));
        assert!(negotiate(TCP_ECN_ON, TCP_ECN_ON, false));
        assert!(!negotiate(TCP_ECN_PASSIVE, TCP_ECN_ON, false), "2 only accepts");
        assert!(!negotiate(TCP_ECN_ON, TCP_ECN_OFF, false), "0 refuses");
        assert!(negotiate(TCP_ECN_PASSIVE, TCP_ECN_PASSIVE, true), "tcp_ca_needs_ecn requests");
        assert!(negotiate(TCP_ECN_OFF, TCP_ECN_OFF, true), "the receiver's DCTCP accepts too");
    }

    #[test]
    fn rfc3168_receiver_echoes_ece_from_a_ce_segment_until_cwr() {
        let mut r = RxEcn::new(true, false);
        assert_eq!(r.check_ce(ECT, 1, false), CeEffects::default());
        assert!(!r.demand_cwr);
        let fx = r.check_ce(CE, 2, true);
        assert!(fx.quickack && r.demand_cwr);
        // Later unmarked segments keep the echo on.
        assert_eq!(r.check_ce(ECT, 3, false), CeEffects::default());
        assert!(r.demand_cwr);
        // Another CE while echoing: no new quick-ACK burst.
        assert!(!r.check_ce(CE, 4, false).quickack);
        // CWR ends it, and the segment carrying it is ACKed at once.
        assert!(r.accept_cwr(ECT_CWR));
        assert_eq!(r.check_ce(ECT_CWR, 5, false), CeEffects::default());
        assert!(!r.demand_cwr);
    }

    #[test]
    fn a_ce_segment_carrying_cwr_restarts_the_echo() {
        let mut r = RxEcn::new(true, false);
        r.check_ce(CE, 1, false);
        let seg = SegEcn { codepoint: Codepoint::Ce, cwr: true };
        assert!(r.accept_cwr(seg));
        r.check_ce(seg, 2, false);
        assert!(r.demand_cwr);
    }

    #[test]
    fn not_ect_after_ecn_was_seen_enters_quickack_mode() {
        let mut r = RxEcn::new(true, false);
        assert!(!r.check_ce(SegEcn::NOT_ECT, 1, false).quickack, "nothing seen yet");
        r.check_ce(ECT, 2, false);
        assert!(r.check_ce(SegEcn::NOT_ECT, 3, false).quickack);
    }

    #[test]
    fn without_negotiation_the_receiver_ignores_ecn() {
        let mut r = RxEcn::new(false, true);
        assert_eq!(r.check_ce(CE, 1, true), CeEffects::default());
        assert!(!r.accept_cwr(ECT_CWR));
        assert!(!r.demand_cwr);
    }

    #[test]
    fn dctcp_echo_mirrors_the_ce_state_and_acks_at_once_when_it_flips() {
        let mut r = RxEcn::new(true, true);
        assert_eq!(r.check_ce(ECT, 1, false), CeEffects::default(), "state 0 stays 0");
        // 0 -> 1 with a delayed ACK pending: first the ACK of the data up to
        // the previous segment with ECE clear, then this one at once.
        let fx = r.check_ce(CE, 2, true);
        assert_eq!(fx.lead_ack, Some((1, false)));
        assert!(fx.ack_now && r.demand_cwr);
        let fx = r.check_ce(CE, 3, false);
        assert!(!fx.ack_now && fx.lead_ack.is_none() && r.demand_cwr);
        // 1 -> 0 without a delayed ACK pending: only the immediate ACK.
        let fx = r.check_ce(ECT, 4, false);
        assert_eq!((fx.ack_now, fx.lead_ack), (true, None));
        assert!(!r.demand_cwr, "ECE clears with the CE state, not on CWR");
    }
}
