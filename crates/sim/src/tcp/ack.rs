//! ACK processing: tcp_ack() and tcp_fastretrans_alert() of Linux
//! net/ipv4/tcp_input.c, with the CCA hooks called where Linux calls them.

use crate::cc::{AckSample, CaState, CA_ACK_ECE, CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE};
use crate::units::Time;

use super::chrono::ChronoKind;
use super::receiver::{Ack, MAX_SACKS};
use super::scoreboard::{FLAG_EVER_RETRANS, FLAG_LOST, FLAG_RETRANS, FLAG_SACKED};
use super::timestamps;
use super::sender::{Sender, SenderEnv};

/// The part of SACK block `block` not already reported by the previous
/// ACK's blocks (`cache`, tp->recv_sack_cache): its ends are moved past
/// any cached block they fall in; empty (start >= end) when all of it was.
#[inline]
fn untagged_part(block: (u64, u64), cache: &[(u64, u64); MAX_SACKS]) -> (u64, u64) {
    let (mut s, mut e) = block;
    for &(cs, ce) in cache {
        if cs <= s && s < ce {
            s = ce;
        }
        if cs < e && e <= ce {
            e = cs;
        }
    }
    (s, e)
}

/// What tcp_process_loss() reads of an ACK besides FLAG_SND_UNA_ADVANCED
/// (all false outside Loss, where nothing reads it).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LossAck {
    /// FLAG_ORIG_SACK_ACKED: never-retransmitted data sent before high_seq
    /// was SACKed or acked.
    pub orig_acked: bool,
    /// FLAG_DATA_SACKED or a duplicate ACK (num_dupack > 0).
    pub sacked_or_dupack: bool,
}

/// net.ipv4.tcp_max_reordering default.
const TCP_MAX_REORDERING: u32 = 300;

impl Sender {
    /// Segments of the retransmission queue the SACK processing of `ack`
    /// walks where that queue is a linked list (Linux before 4.15; the
    /// rb-tree of commit 75c119afe14f replaced it): 3.10's
    /// tcp_sacktag_write_queue() walks from the queue's head
    /// (tcp_write_queue_head) through its blocks in sequence order
    /// (tcp_sacktag_skip() steps skb by skb), except that a block at or
    /// above the highest SACKed sequence starts from tcp_highest_sack(),
    /// and parts the previous ACK reported (recv_sack_cache) are not
    /// tagged again. So an ACK whose new SACK information lies below the
    /// highest SACK (a hole being repaired, a further loss) walks from
    /// snd_una to there. A host's CPU model charges this walk (host/cpu.rs).
    pub fn list_walk_segments(&self, ack: &Ack) -> u64 {
        let highest = self.sb.highest_sacked();
        let mut walk_to = self.sb.snd_una;
        for &block in ack.sack_blocks() {
            let (s, e) = untagged_part(block, &self.sack_cache);
            if s < e && s < highest {
                walk_to = walk_to.max(s);
            }
        }
        walk_to - self.sb.snd_una
    }

    /// tcp_ack(): process one ACK arriving at `now`.
    pub fn on_ack<E: SenderEnv>(&mut self, now: Time, ack: &Ack, env: &mut E) {
        self.tp.now = now;
        if ack.ack > self.sb.snd_nxt {
            return; // acks unsent data
        }
        if ack.ack < self.sb.snd_una {
            self.old_ack(now, ack, env);
            return;
        }
        let prior_in_flight = self.tp.in_flight();
        let prior_delivered = self.tp.delivered;
        let prior_lost = self.tp.lost;
        let prior_una = self.sb.snd_una;
        // tcp_ack()'s prior_fack: the highest SACKed sequence, else snd_una.
        let prior_fack = self.sb.highest_sacked().max(prior_una);
        self.rate.begin_ack(prior_in_flight);
        let prior_wnd_end = self.snd_wnd_end;
        self.snd_wnd_end = ack.ack + ack.wnd as u64; // tcp_ack_update_window()
        let min_rtt = self.rtt.min_rtt;

        let (newly_sacked, first_sackt, last_sackt, orig_sacked) = self.sacktag(now, ack, min_rtt);
        // tcp_ecn_rcv_ecn_echo(): ECE counts on an ECN connection (FLAG_ECE).
        let ece = E::ECN && ack.ece && self.tp.ecn_ok;
        self.tp.sacked_out += newly_sacked;
        self.count_delivered(newly_sacked, ece);
        self.count_dsack_delivered(ack, ece);

        // tcp_clean_rtx_queue(): cumulatively acked segments.
        let mut first_ackt: Option<Time> = None;
        let mut last_ackt: Option<Time> = None;
        let mut retrans_acked = false;
        let mut newly_acked = 0u32;
        // The lowest never-retransmitted segment this ACK acks cumulatively
        // (tcp_clean_rtx_queue()'s `reord`).
        let mut reord: Option<u64> = None;
        while self.sb.snd_una < ack.ack {
            // A fully acked run is freed, a partly acked one trimmed
            // (tcp_tso_acked()); its segments are treated alike.
            let run = self.sb.pop_acked(ack.ack);
            let n = run.len();
            let flags = run.seg.flags;
            if flags & FLAG_SACKED != 0 {
                self.tp.sacked_out = self.tp.sacked_out.saturating_sub(n);
            } else {
                if flags & FLAG_RETRANS != 0 {
                    self.tp.retrans_out = self.tp.retrans_out.saturating_sub(n);
                }
                if flags & FLAG_LOST != 0 {
                    self.tp.lost_out = self.tp.lost_out.saturating_sub(n);
                }
                let xmit = run.seg.xmit;
                if flags & FLAG_EVER_RETRANS != 0 {
                    retrans_acked = true;
                } else {
                    first_ackt = first_ackt.or(Some(xmit));
                    last_ackt = Some(xmit);
                    reord = reord.or(Some(run.start));
                }
                let last = run.end - 1;
                let mut seg = run.last_seg();
                self.rate.on_delivered(&mut seg, last, self.tp.delivered);
                self.rack.advance(flags, last, xmit, now, min_rtt);
                newly_acked += n;
            }
        }
        // tcp_clean_rtx_queue(): "Non-retransmitted hole got filled? That's
        // reordering" (tcp_check_sack_reordering(): reord_seen).
        if let Some(r) = reord.filter(|&r| r < prior_fack) {
            self.rack.reord_seen = true;
            self.check_sack_reordering(r, prior_fack.max(self.sb.highest_sacked()));
        }
        let una_advanced = self.sb.snd_una > prior_una;
        if una_advanced {
            self.sb.trim_sacked();
            self.rto_retransmits = 0;
        }
        self.tp.packets_out = self.sb.packets_out();
        self.tp.snd_una = self.sb.snd_una;
        self.count_delivered(newly_acked, ece);

        // tcp_ack_update_rtt(): Karn's rule, the SACK RTT, then the
        // timestamp echo as fallbacks.
        let mut seq_rtt = None;
        let mut ca_rtt = None;
        if let (Some(f), Some(l)) = (first_ackt, last_ackt) {
            if !retrans_acked {
                seq_rtt = Some(now - f);
                ca_rtt = Some(now - l);
            }
        }
        let mut sack_rtt = None;
        if let (Some(f), Some(l)) = (first_sackt, last_sackt) {
            sack_rtt = Some(now - f);
            ca_rtt = Some(now - l);
        }
        let mut seq_rtt = seq_rtt.or(sack_rtt);
        if seq_rtt.is_none() && una_advanced {
            // RTTM (RFC 7323 §4.1): an ACK of new data that Karn's rule
            // left without a sample times its echoed timestamp
            // (tcp/timestamps.rs), for the estimator and the CCA alike.
            if let Some(ts_rtt) = timestamps::echo_rtt(now, ack.tsecr) {
                seq_rtt = Some(ts_rtt);
                ca_rtt = Some(ts_rtt);
            }
        }
        if let Some(m) = seq_rtt {
            if let Some(c) = ca_rtt {
                self.rtt.update_min(c);
            }
            self.rtt.sample(m, self.sb.snd_una, self.sb.snd_nxt);
            self.backoff = 0; // RFC 6298: reset backoff on a valid sample
            self.refresh_rto();
            self.tp.srtt = self.rtt.srtt;
            self.tp.min_rtt = self.rtt.min_rtt;
        }
        self.rate.rs.rtt = ca_rtt;

        // Round-trip counting (ConnState.round_count): a round ends when
        // snd_una passes the snd_nxt of the round's start, as HyStart's
        // after(tp->snd_una, ca->end_seq) test in hystart_update().
        if self.sb.snd_una > self.round_end_seq {
            self.tp.round_count += 1;
            self.round_end_seq = self.sb.snd_nxt;
        }

        let newly = (self.tp.delivered - prior_delivered) as u32;
        if newly > 0 {
            let since_sent = self.tp.delivered.saturating_sub(self.rate.rs.prior_delivered);
            let in_flight = (since_sent.saturating_mul(self.tp.mss_bytes as u64)).min(u32::MAX as u64) as u32;
            let sample = AckSample { pkts_acked: newly, rtt: ca_rtt, in_flight };
            self.cc.pkts_acked(&mut self.tp, &sample);
        }

        self.cc.in_ack_event(&mut self.tp, ack_event_flags(ack, una_advanced, ece));

        if let Some(seq) = ack.dsack {
            self.undo_on_dsack(seq);
            // tcp_dsack_seen(): RACK widens its window on D-SACKs that may
            // answer its own spurious retransmissions: once reordering was
            // seen, and not for a tail loss probe's (FLAG_DSACK_TLP, the
            // D-SACK ending at tlp_high_seq).
            if self.rack.reord_seen && self.tlp_high_seq != Some(seq + 1) {
                self.rack.dsack_seen = true;
            }
        }
        let prior = self.rate.rs_has_prior.then_some(self.rate.rs.prior_delivered);
        self.rack.update_reo_wnd(prior, self.tp.delivered);
        self.process_tlp_ack(ack, una_advanced, newly_sacked > 0);

        // tcp_fastretrans_alert(): loss detection and CA state machine.
        // What tcp_process_loss() reads, in Loss only. FLAG_ORIG_SACK_ACKED:
        // never-retransmitted data sent before high_seq was SACKed, or
        // acked (the lowest such acked segment, `reord`, lies below it). A
        // duplicate ACK (num_dupack): nothing acked, SACKed or D-SACKed,
        // the window unchanged (FLAG_NOT_DUP, FLAG_DSACKING_ACK).
        let frto = if self.tp.ca_state == CaState::Loss {
            let dupack = !una_advanced && newly_sacked == 0 && ack.dsack.is_none() && self.snd_wnd_end == prior_wnd_end;
            LossAck {
                orig_acked: orig_sacked || reord.is_some_and(|r| r < self.high_seq),
                sacked_or_dupack: newly_sacked > 0 || dupack,
            }
        } else {
            LossAck::default()
        };
        self.fastretrans_alert(now, una_advanced, ece, frto, env);

        if newly > 0 {
            self.set_xmit_timer(now, env); // FLAG_SET_XMIT_TIMER
        }

        // tcp_rate_gen() then tcp_cong_control().
        let lost = (self.tp.lost - prior_lost) as u32;
        let min_rtt = self.rtt.min_rtt;
        self.rate.gen(&mut self.tp, newly, lost, min_rtt);
        self.cong_control(newly, una_advanced, lost > 0);

        if self.tp.packets_out == 0 {
            self.chrono.set(now, ChronoKind::None);
        }
        // tcp_new_space() → tcp_should_expand_sndbuf(): the buffer a
        // writing application waits on grows while the flight is below
        // cwnd (a sender that always has data is held by wmem_max).
        if self.write_seq != u64::MAX && self.tp.in_flight() < self.tp.snd_cwnd {
            self.sndbuf.expand(self.tp.snd_cwnd, self.reordering);
        }
        self.xmit_recovery(now, env);
    }

    /// tcp_sacktag_write_queue(): tags the SACK blocks of `ack`; returns
    /// the segments newly SACKed and the send times of the first and last
    /// never-retransmitted ones (the SACK RTT sample).
    #[inline(always)]
    fn sacktag(&mut self, now: Time, ack: &Ack, min_rtt: Time) -> (u32, Option<Time>, Option<Time>, bool) {
        let mut orig_sacked = false;
        // The lowest never-retransmitted segment SACKed below the highest
        // SACK (tcp_sacktag_one()'s state->reord).
        let mut reord_low = u64::MAX;
        let mut first_sackt: Option<Time> = None;
        let mut last_sackt: Option<Time> = None;
        let mut newly_sacked = 0u32;
        let mut ranges = std::mem::take(&mut self.range_scratch);
        let cache = self.sack_cache;
        // tcp_sacktag_write_queue(): "order SACK blocks to allow in order
        // walk of the retrans queue", so a block below the highest one is
        // tagged before that one raises the highest SACK.
        let mut blocks = [(0u64, 0u64); MAX_SACKS];
        let nblocks = ack.sack_blocks().len();
        blocks[..nblocks].copy_from_slice(ack.sack_blocks());
        blocks[..nblocks].sort_unstable_by_key(|b| b.0);
        for &(s0, e0) in &blocks[..nblocks] {
            // tcp_sacktag_write_queue()'s recv_sack_cache: parts of a block
            // already reported by the previous ACK are fully tagged; skip them.
            let (s, e) = untagged_part((s0, e0), &cache);
            if s >= e {
                continue;
            }
            let fack = self.sb.highest_sacked();
            ranges.clear();
            ranges.extend_from_slice(self.sb.sack_block(s, e));
            for &(rs, re) in &ranges {
                // tcp_sacktag_walk(): the block's edges split runs
                // (tcp_match_skb_to_sack() -> tcp_fragment()); every
                // segment of a run inside it is tagged alike
                // (tcp_sacktag_one() per skb, pcount segments at once).
                self.sb.isolate(rs, re);
                let mut seq = rs;
                while seq < re {
                    let id = self.sb.id_at(seq);
                    let run = self.sb.run_mut(id);
                    let n = run.len();
                    let flags = run.seg.flags;
                    let xmit = run.seg.xmit;
                    if flags & FLAG_RETRANS != 0 {
                        self.tp.retrans_out = self.tp.retrans_out.saturating_sub(n);
                    }
                    if flags & FLAG_LOST != 0 {
                        self.tp.lost_out = self.tp.lost_out.saturating_sub(n);
                    }
                    run.seg.flags = (flags & !(FLAG_RETRANS | FLAG_LOST)) | FLAG_SACKED;
                    if flags & FLAG_EVER_RETRANS == 0 {
                        // tcp_check_sack_reordering(): a never-retransmitted
                        // segment below the highest SACK arrived late.
                        if run.start < fack {
                            self.rack.reord_seen = true;
                            reord_low = reord_low.min(run.start);
                        }
                        first_sackt = first_sackt.or(Some(xmit));
                        orig_sacked |= run.end <= self.high_seq; // FLAG_ORIG_SACK_ACKED
                        last_sackt = Some(last_sackt.map_or(xmit, |t: Time| t.max(xmit)));
                    }
                    // Per segment in order, tcp_rate_skb_delivered() and
                    // tcp_rack_advance() keep the last one of a run sent at
                    // one time (tcp_skb_sent_after()'s sequence tie-break).
                    let last = run.end - 1;
                    let mut seg = run.last_seg();
                    self.rate.on_delivered(&mut seg, last, self.tp.delivered);
                    run.seg.delivered_mstamp = seg.delivered_mstamp;
                    self.rack.advance(flags, last, xmit, now, min_rtt);
                    newly_sacked += n;
                    // tcp_shifted_skb(): SACKed neighbours sharing their
                    // state become one run.
                    let id = self.sb.merge_back(id);
                    seq = self.sb.run(id).end;
                }
                self.sb.merge_at(re);
            }
        }
        self.range_scratch = ranges;
        self.sack_cache = [(0, 0); MAX_SACKS];
        self.sack_cache[..ack.sack_blocks().len()].copy_from_slice(ack.sack_blocks());
        if reord_low != u64::MAX {
            self.check_sack_reordering(reord_low, self.sb.highest_sacked());
        }
        (newly_sacked, first_sackt, last_sackt, orig_sacked)
    }

    /// tcp_ack()'s old_ack path: an ACK below snd_una (one overtaken by a
    /// later ACK) moves nothing cumulatively, but "if data was SACKed, tag
    /// it and see if we should send more data. If data was DSACKed, see if
    /// we can undo a cwnd reduction": tcp_sacktag_write_queue(),
    /// tcp_fastretrans_alert(), tcp_xmit_recovery(); no window update, RTT
    /// sample or congestion control.
    fn old_ack<E: SenderEnv>(&mut self, now: Time, ack: &Ack, env: &mut E) {
        if ack.nsacks == 0 && ack.dsack.is_none() {
            return;
        }
        let min_rtt = self.rtt.min_rtt;
        self.rate.begin_ack(self.tp.in_flight());
        let (newly_sacked, _, _, orig_sacked) = self.sacktag(now, ack, min_rtt);
        self.tp.sacked_out += newly_sacked;
        self.count_delivered(newly_sacked, false);
        self.count_dsack_delivered(ack, false);
        if let Some(seq) = ack.dsack {
            self.undo_on_dsack(seq);
        }
        // FLAG_DATA_SACKED; the old_ack path counts no duplicate ACK
        // (num_dupack stays 0).
        let frto = LossAck { orig_acked: orig_sacked, sacked_or_dupack: newly_sacked > 0 };
        self.fastretrans_alert(now, false, false, frto, env);
        self.push(now, env);
    }

    /// tcp_check_sack_reordering(): data below `fack` (the highest SACK)
    /// from `low` arrived late: tp->reordering grows to that distance in
    /// segments (at most net.ipv4.tcp_max_reordering, 300) and
    /// tp->reord_seen counts the event. With RACK the degree is reported
    /// (tcpi_reordering) but decides nothing once reordering was seen.
    #[cold]
    fn check_sack_reordering(&mut self, low: u64, fack: u64) {
        let metric = fack.saturating_sub(low);
        if metric > self.reordering as u64 {
            self.reordering = metric.min(TCP_MAX_REORDERING as u64) as u32;
        }
        self.reord_events += 1;
    }

    /// tcp_dsack_seen(): a D-SACKed segment was a spurious retransmission
    /// and "is delivered" (state->sack_delivered), unless more duplicates
    /// were reported than segments retransmitted (tp->dsack_dups against
    /// tp->total_retrans: the peer's duplicates were not ours).
    #[inline]
    fn count_dsack_delivered(&mut self, ack: &Ack, ece: bool) {
        if ack.dsack.is_some() {
            self.dsack_dups += 1;
            if self.dsack_dups <= self.stats.retrans {
                self.count_delivered(1, ece);
            }
        }
    }

    /// tcp_count_delivered(): delivered, and delivered_ce when the ACK
    /// carried ECE.
    #[inline]
    fn count_delivered(&mut self, n: u32, ece_ack: bool) {
        self.tp.delivered += n as u64;
        if ece_ack {
            self.tp.delivered_ce += n as u64;
        }
    }

    /// tcp_cong_control().
    fn cong_control(&mut self, acked_sacked: u32, una_advanced: bool, newly_lost: bool) {
        // tcp_is_cwnd_limited() is evaluated now, against the cwnd of this
        // moment (an RTO may have cut it since the last transmission).
        self.tp.is_cwnd_limited = self.is_cwnd_limited();
        if self.owns {
            let rs = self.rate.rs;
            self.cc.cong_control(&mut self.tp, &rs);
            // The state machine of an algorithm that exposes its variables
            // (BBR) runs here and in the hooks this ACK called before it
            // (set_state, undo_cwnd): its log compares after them all.
            self.note_cc_vars(self.tp.now);
            return;
        }
        if self.in_cwnd_reduction() {
            let in_flight = self.tp.in_flight();
            if let Some(c) = self.prr.cwnd(
                self.tp.snd_ssthresh,
                self.tp.prior_cwnd,
                in_flight,
                acked_sacked,
                una_advanced,
                newly_lost,
            ) {
                self.tp.snd_cwnd = c.min(self.tp.snd_cwnd_clamp);
            }
        } else if self.may_raise_cwnd(una_advanced, acked_sacked > 0) {
            self.cc.cong_avoid(&mut self.tp, acked_sacked);
        }
        if self.pacing_used() {
            self.update_pacing_rate();
        }
    }

    /// tcp_may_raise_cwnd(): grow only on in-order delivery unless
    /// reordering was seen.
    fn may_raise_cwnd(&self, una_advanced: bool, forward_progress: bool) -> bool {
        if self.rack.reord_seen {
            forward_progress
        } else {
            una_advanced
        }
    }

    /// tcp_process_tlp_ack(): did a tail loss probe repair a loss?
    fn process_tlp_ack(&mut self, ack: &Ack, una_advanced: bool, sacked: bool) {
        let Some(high) = self.tlp_high_seq else { return };
        if ack.ack < high {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = None; // a probe of new data was acked
        } else if ack.dsack.is_some() {
            self.tlp_high_seq = None; // both copies arrived: no loss
        } else if ack.ack > high {
            // The probe repaired a loss: reduce cwnd once (CWR).
            self.init_cwnd_reduction();
            self.set_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
        } else if !(una_advanced || sacked) {
            self.tlp_high_seq = None;
        }
    }

    /// tcp_try_keep_open().
    fn try_keep_open(&mut self) {
        let left_out = self.tp.sacked_out + self.tp.lost_out;
        let st = if left_out > 0 || self.tp.retrans_out > 0 { CaState::Disorder } else { CaState::Open };
        if self.tp.ca_state != st {
            self.set_state(st);
            self.high_seq = self.sb.snd_nxt;
        }
    }

    /// tcp_fastretrans_alert() for a SACK connection with RACK (inlined
    /// into both callers: on the hot ACK path a call costs ~2 % of a run).
    #[inline(always)]
    fn fastretrans_alert<E: SenderEnv>(&mut self, now: Time, una_advanced: bool, ece: bool, frto: LossAck, env: &mut E) {
        // A. "ECE, hence prohibit cwnd undoing, the reduction is required."
        if ece {
            self.prior_ssthresh = 0;
        }
        // D. Exit states once high_seq is acknowledged.
        let st = self.tp.ca_state;
        if st != CaState::Open && self.sb.snd_una >= self.high_seq {
            match st {
                CaState::Cwr if self.sb.snd_una != self.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_state(CaState::Open);
                }
                CaState::Recovery => {
                    self.try_undo_recovery();
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        // E. Process state.
        match self.tp.ca_state {
            CaState::Recovery => {
                if self.try_undo_dsack() {
                    self.try_keep_open();
                }
                if self.rack.advanced {
                    self.rack.advanced = false;
                    self.rack_detect(now, env);
                }
                // Undo reverted the state; evident loss starts a new recovery.
                if self.tp.ca_state != CaState::Recovery && self.tp.lost_out > 0 {
                    self.enter_recovery(ece);
                }
                return;
            }
            CaState::Loss => {
                self.process_loss(una_advanced, frto);
                if self.rack.advanced {
                    self.rack.advanced = false;
                    self.rack_detect(now, env);
                }
                if self.tp.ca_state != CaState::Open {
                    return;
                }
            }
            _ => {}
        }
        if self.tp.ca_state <= CaState::Disorder && self.undo_marker && self.undo_retrans == 0 {
            self.try_undo_dsack(); // a late D-SACK proves the episode spurious
        }
        if self.rack.advanced {
            self.rack.advanced = false;
            self.rack_detect(now, env);
        }
        if self.tp.lost_out == 0 {
            // tcp_try_to_open(): ECE reduces cwnd once (tcp_enter_cwr).
            if ece {
                self.enter_cwr();
            }
            if self.tp.ca_state != CaState::Cwr {
                self.try_keep_open();
            }
            return;
        }
        self.enter_recovery(ece);
    }
}

/// The `CA_ACK_*` flags tcp_ack() passes to tcp_in_ack_event(). Header
/// prediction (tcp_rcv_established()) takes the fast path for an ACK
/// without SACK options and an unchanged window (the simulated receiver
/// advertises a constant one); when that ACK advances snd_una it is a
/// pure window update (CA_ACK_WIN_UPDATE). Every other ACK takes the slow
/// path (CA_ACK_SLOWPATH), with CA_ACK_WIN_UPDATE when
/// tcp_may_update_window() holds, i.e. snd_una advanced. An ACK with ECE
/// fails header prediction (its flags differ from pred_flags) and adds
/// CA_ACK_ECE.
fn ack_event_flags(ack: &Ack, una_advanced: bool, ece: bool) -> u32 {
    let win_update = if una_advanced { CA_ACK_WIN_UPDATE } else { 0 };
    if ack.nsacks == 0 && ack.dsack.is_none() && una_advanced && !ack.ece {
        win_update
    } else if ece {
        CA_ACK_SLOWPATH | CA_ACK_ECE | win_update
    } else {
        CA_ACK_SLOWPATH | win_update
    }
}
