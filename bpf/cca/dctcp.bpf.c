// SPDX-License-Identifier: GPL-2.0-only
/*
 * DCTCP as a BPF struct_ops congestion control: a port of the kernel's
 * net/ipv4/tcp_dctcp.c and tcp_dctcp.h (Alizadeh et al., "Data Center TCP
 * (DCTCP)", SIGCOMM 2010; RFC 8257), function by function, for kernels built
 * without CONFIG_TCP_CONG_DCTCP. It registers as "dctcp"; fatpipe loads it
 * only where the kernel has no dctcp of its own.
 *
 * Where it departs from the C file:
 * * dctcp_init() without ECN: the kernel switches the socket to its
 *   private "dctcp-reno" ops (reno with dctcp's get_info) and clears ECT;
 *   a BPF program cannot assign icsk_ca_ops, so it switches the socket to
 *   "reno" with bpf_setsockopt(TCP_CONGESTION), which runs
 *   tcp_reinit_congestion_control() and clears ECT the same way. The
 *   socket then reports "reno" rather than "dctcp-reno".
 * * dctcp_get_info() is not ported: a BPF program cannot write the
 *   kernel's union tcp_cc_info, so TCP_CC_INFO returns nothing (no alpha in
 *   the samples).
 * * __tcp_send_ack() in dctcp_ece_ack_update() is the bpf_tcp_send_ack()
 *   helper, which calls it; icsk_ack.pending and ecn_flags are among the
 *   fields a BPF CCA may write.
 * * the module parameters dctcp_shift_g and dctcp_alpha_on_init are
 *   read-only globals with the module's defaults (4, 1024).
 * * tcp_reno_cong_avoid() is fatpipe's port (fp_tcp_cong.h).
 * * registered with TCP_CONG_NEEDS_ECN (as the kernel's) and
 *   TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 */
#include "fp_tcp_cong.h"

#define DCTCP_MAX_ALPHA 1024U

struct dctcp {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 prior_rcv_nxt;
	__u32 dctcp_alpha;
	__u32 next_seq;
	__u32 ce_state;
	__u32 loss_cwnd;
};

_Static_assert(sizeof(struct dctcp) <= 104, "struct dctcp must fit icsk_ca_priv");

const volatile unsigned int dctcp_shift_g = 4; /* g = 1/2^4 */
const volatile unsigned int dctcp_alpha_on_init = DCTCP_MAX_ALPHA;

static const char fallback[] = "reno";

/* dctcp_reset() */
static __always_inline void dctcp_reset(const struct tcp_sock *tp, struct dctcp *ca)
{
	ca->next_seq = tp->snd_nxt;

	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

/* dctcp_init() */
SEC("struct_ops")
void BPF_PROG(dctcp_init, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	unsigned char state = sk->__sk_common.skc_state;

	if ((tp->ecn_flags & TCP_ECN_MODE_ANY) || (state == TCP_LISTEN || state == TCP_CLOSE)) {
		struct dctcp *ca = inet_csk_ca(sk);

		ca->prior_rcv_nxt = tp->rcv_nxt;

		ca->dctcp_alpha = min(dctcp_alpha_on_init, DCTCP_MAX_ALPHA);

		ca->loss_cwnd = 0;
		ca->ce_state = 0;

		dctcp_reset(tp, ca);
		return;
	}

	/* No ECN support? Fall back to Reno. Also need to clear
	 * ECT from sk since it is set during 3WHS for DCTCP.
	 * (The kernel: icsk_ca_ops = &dctcp_reno; INET_ECN_dontxmit(sk).)
	 */
	bpf_setsockopt(sk, SOL_TCP, TCP_CONGESTION, (void *)fallback, sizeof(fallback));
}

/* dctcp_ssthresh() */
SEC("struct_ops")
__u32 BPF_PROG(dctcp_ssthresh, struct sock *sk)
{
	struct dctcp *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	return max(tp->snd_cwnd - ((tp->snd_cwnd * ca->dctcp_alpha) >> 11U), 2U);
}

/* dctcp_update_alpha(): the in_ack_event hook */
SEC("struct_ops")
void BPF_PROG(dctcp_update_alpha, struct sock *sk, __u32 flags)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);

	/* Expired RTT */
	if (!before(tp->snd_una, ca->next_seq)) {
		__u32 delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
		__u32 alpha = ca->dctcp_alpha;
		__u32 shifted = alpha >> dctcp_shift_g;

		/* alpha = (1 - g) * alpha + g * F */

		/* min_not_zero(alpha, alpha >> dctcp_shift_g) */
		alpha -= alpha == 0 ? shifted : (shifted == 0 ? alpha : min(alpha, shifted));
		if (delivered_ce) {
			__u32 delivered = tp->delivered - ca->old_delivered;

			/* If dctcp_shift_g == 1, a 32bit value would overflow
			 * after 8 M packets.
			 */
			delivered_ce <<= (10 - dctcp_shift_g);
			delivered_ce /= max(1U, delivered);

			alpha = min(alpha + delivered_ce, DCTCP_MAX_ALPHA);
		}
		ca->dctcp_alpha = alpha;
		dctcp_reset(tp, ca);
	}
}

/* dctcp_react_to_loss() */
static __always_inline void dctcp_react_to_loss(struct sock *sk)
{
	struct dctcp *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = max(tp->snd_cwnd >> 1U, 2U);
}

/* dctcp_state(): RTO is handled in dctcp_cwnd_event so that only one
 * loss adjustment happens per RTT. */
SEC("struct_ops")
void BPF_PROG(dctcp_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Recovery && new_state != icsk_ca_state(sk))
		dctcp_react_to_loss(sk);
}

/* tcp_dctcp.h dctcp_ece_ack_cwr() */
static __always_inline void dctcp_ece_ack_cwr(struct sock *sk, __u32 ce_state)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ce_state == 1)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

/* tcp_dctcp.h dctcp_ece_ack_update(): the minimal CE state machine
 * (0: last packet was not CE, 1: it was). */
static __always_inline void dctcp_ece_ack_update(struct sock *sk, int evt, __u32 *prior_rcv_nxt, __u32 *ce_state)
{
	__u32 new_ce_state = (evt == CA_EVENT_ECN_IS_CE) ? 1 : 0;

	if (*ce_state != new_ce_state) {
		/* CE state has changed, force an immediate ACK to
		 * reflect the new CE state. If an ACK was delayed,
		 * send that first to reflect the prior CE state.
		 */
		if (inet_csk(sk)->icsk_ack.pending & ICSK_ACK_TIMER) {
			dctcp_ece_ack_cwr(sk, *ce_state);
			bpf_tcp_send_ack(sk, *prior_rcv_nxt);
		}
		inet_csk(sk)->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	*prior_rcv_nxt = tcp_sk(sk)->rcv_nxt;
	*ce_state = new_ce_state;
	dctcp_ece_ack_cwr(sk, new_ce_state);
}

/* dctcp_cwnd_event() */
SEC("struct_ops")
void BPF_PROG(dctcp_cwnd_event, struct sock *sk, int ev)
{
	struct dctcp *ca = inet_csk_ca(sk);

	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
	case CA_EVENT_ECN_NO_CE:
		dctcp_ece_ack_update(sk, ev, &ca->prior_rcv_nxt, &ca->ce_state);
		break;
	case CA_EVENT_LOSS:
		dctcp_react_to_loss(sk);
		break;
	default:
		/* Don't care for the rest. */
		break;
	}
}

/* dctcp_cwnd_undo() */
SEC("struct_ops")
__u32 BPF_PROG(dctcp_cwnd_undo, struct sock *sk)
{
	const struct dctcp *ca = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);

	return max(tp->snd_cwnd, ca->loss_cwnd);
}

/* .cong_avoid = tcp_reno_cong_avoid */
SEC("struct_ops")
void BPF_PROG(dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	fp_tcp_reno_cong_avoid(sk, ack, acked);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops dctcp = {
	.init = (void *)dctcp_init,
	.in_ack_event = (void *)dctcp_update_alpha,
	.cwnd_event = (void *)dctcp_cwnd_event,
	.ssthresh = (void *)dctcp_ssthresh,
	.cong_avoid = (void *)dctcp_cong_avoid,
	.undo_cwnd = (void *)dctcp_cwnd_undo,
	.set_state = (void *)dctcp_state,
	.flags = TCP_CONG_NEEDS_ECN | TCP_CONG_NON_RESTRICTED,
	.name = "dctcp",
};
