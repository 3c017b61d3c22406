// SPDX-License-Identifier: GPL-2.0-only
/*
 * YeAH TCP as a BPF struct_ops congestion control: a port of the kernel's
 * net/ipv4/tcp_yeah.c (A. Baiocchi, A. P. Castellani, F. Vacirca, "YeAH-TCP:
 * Yet Another Highspeed TCP", PFLDnet 2007), function by function, for
 * kernels built without CONFIG_TCP_CONG_YEAH. It registers as "yeah";
 * fatpipe loads it only where the kernel has none of its own. The Vegas
 * bookkeeping it shares with Vegas is fp_tcp_vegas.h (tcp_vegas.h in the
 * kernel).
 *
 * Where it departs from the C file:
 * * tcp_yeah_init() lowers snd_cwnd_clamp to 0xffffffff/128; a BPF CCA
 *   may not write snd_cwnd_clamp (net/ipv4/bpf_tcp_ca.c), so the port stops
 *   the increase at that bound instead (YEAH_CWND_MAX): the same for any
 *   cwnd below 33,554,431 segments;
 * * tcp_vegas_get_info() is not ported (TCP_CC_INFO returns nothing);
 * * do_div() is a plain unsigned 64-bit division (BPF has one);
 * * tcp_slow_start(), tcp_cong_avoid_ai() and tcp_reno_undo_cwnd() are
 *   fatpipe's ports (fp_tcp_cong.h);
 * * registered with TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 */
#include "fp_tcp_vegas.h"

#define TCP_YEAH_ALPHA 80   /* number of packets queued at the bottleneck */
#define TCP_YEAH_GAMMA 1    /* fraction of queue to be removed per rtt */
#define TCP_YEAH_DELTA 3    /* log minimum fraction of cwnd to be removed on loss */
#define TCP_YEAH_EPSILON 1  /* log maximum fraction to be removed on early decongestion */
#define TCP_YEAH_PHY 8      /* maximum delta from base */
#define TCP_YEAH_RHO 16     /* minimum number of consecutive rtt to consider competition on loss */
#define TCP_YEAH_ZETA 50    /* minimum number of state switches to reset reno_count */

#define TCP_SCALABLE_AI_CNT 100U

/* tcp_yeah_init()'s clamp, which the port cannot write (see the header) */
#define YEAH_CWND_MAX (0xffffffffU / 128)

/* YeAH variables */
struct yeah {
	struct vegas vegas; /* must be first */

	/* YeAH */
	__u32 lastQ;
	__u32 doing_reno_now;

	__u32 reno_count;
	__u32 fast_count;
};

_Static_assert(sizeof(struct yeah) <= 104, "struct yeah must fit icsk_ca_priv");

/* tcp_yeah_init() */
SEC("struct_ops")
void BPF_PROG(yeah_init, struct sock *sk)
{
	struct yeah *yeah = inet_csk_ca(sk);

	tcp_vegas_init(sk);

	yeah->doing_reno_now = 0;
	yeah->lastQ = 0;

	yeah->reno_count = 2;

	/* The kernel also lowers snd_cwnd_clamp to 0xffffffff/128 here, which
	 * a BPF CCA cannot write: see YEAH_CWND_MAX and the header. */
}

/* tcp_yeah_cong_avoid() */
SEC("struct_ops")
void BPF_PROG(yeah_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct yeah *yeah = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		acked = fp_tcp_slow_start(tp, acked);
		if (!acked)
			goto do_vegas;
	}

	if (tp->snd_cwnd < YEAH_CWND_MAX) {
		if (!yeah->doing_reno_now) {
			/* Scalable */
			fp_tcp_cong_avoid_ai(tp, min(tp->snd_cwnd, TCP_SCALABLE_AI_CNT), acked);
		} else {
			/* Reno */
			fp_tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		}
	}

	/* vegas.beg_snd_una and vegas.beg_snd_nxt are the approximate snd_una
	 * and snd_nxt at the beginning of the current RTT; at the ACK of
	 * beg_snd_nxt the RTT is over (see the C file for the whole note). */
do_vegas:
	if (after(ack, yeah->vegas.beg_snd_nxt)) {
		/* Only with more than 2 RTT samples: with 2 or fewer we get
		 * only 1 ACK per RTT, almost certainly delayed ACKs. */
		if (yeah->vegas.cntRTT > 2) {
			__u32 rtt, queue;
			__u64 bw;

			/* The min RTT seen during the last RTT */
			rtt = yeah->vegas.minRTT;

			/* Compute excess number of packets above bandwidth
			 * Avoid doing full 64 bit divide. */
			bw = tp->snd_cwnd;
			bw *= rtt - yeah->vegas.baseRTT;
			bw /= rtt; /* do_div(bw, rtt) */
			queue = bw;

			if (queue > TCP_YEAH_ALPHA ||
			    rtt - yeah->vegas.baseRTT > (yeah->vegas.baseRTT / TCP_YEAH_PHY)) {
				if (queue > TCP_YEAH_ALPHA && tp->snd_cwnd > yeah->reno_count) {
					__u32 reduction = min(queue / TCP_YEAH_GAMMA,
							      tp->snd_cwnd >> TCP_YEAH_EPSILON);

					tp->snd_cwnd = tp->snd_cwnd - reduction;

					tp->snd_cwnd = max(tp->snd_cwnd, yeah->reno_count);

					tp->snd_ssthresh = tp->snd_cwnd;
				}

				if (yeah->reno_count <= 2)
					yeah->reno_count = max(tp->snd_cwnd >> 1, 2U);
				else
					yeah->reno_count++;

				yeah->doing_reno_now = min(yeah->doing_reno_now + 1, 0xffffffU);
			} else {
				yeah->fast_count++;

				if (yeah->fast_count > TCP_YEAH_ZETA) {
					yeah->reno_count = 2;
					yeah->fast_count = 0;
				}

				yeah->doing_reno_now = 0;
			}

			yeah->lastQ = queue;
		}

		/* Save the extent of the current window so we can use this
		 * at the end of the next RTT. */
		yeah->vegas.beg_snd_una = yeah->vegas.beg_snd_nxt;
		yeah->vegas.beg_snd_nxt = tp->snd_nxt;
		yeah->vegas.beg_snd_cwnd = tp->snd_cwnd;

		/* Wipe the slate clean for the next RTT. */
		yeah->vegas.cntRTT = 0;
		yeah->vegas.minRTT = 0x7fffffff;
	}
}

/* tcp_yeah_ssthresh() */
SEC("struct_ops")
__u32 BPF_PROG(yeah_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct yeah *yeah = inet_csk_ca(sk);
	__u32 reduction;

	if (yeah->doing_reno_now < TCP_YEAH_RHO) {
		reduction = yeah->lastQ;

		reduction = min(reduction, max(tp->snd_cwnd >> 1, 2U));

		reduction = max(reduction, tp->snd_cwnd >> TCP_YEAH_DELTA);
	} else
		reduction = max(tp->snd_cwnd >> 1, 2U);

	yeah->fast_count = 0;
	yeah->reno_count = max(yeah->reno_count >> 1, 2U);

	/* max_t(int, cwnd - reduction, 2): a signed comparison */
	return max((int)(tp->snd_cwnd - reduction), 2);
}

/* tcp_vegas_state(), tcp_vegas_cwnd_event(), tcp_vegas_pkts_acked(),
 * tcp_reno_undo_cwnd(): the C file's .set_state, .cwnd_event, .pkts_acked
 * and .undo_cwnd */
SEC("struct_ops")
void BPF_PROG(yeah_state, struct sock *sk, __u8 ca_state)
{
	tcp_vegas_state(sk, ca_state);
}

SEC("struct_ops")
void BPF_PROG(yeah_cwnd_event, struct sock *sk, int event)
{
	tcp_vegas_cwnd_event(sk, event);
}

SEC("struct_ops")
void BPF_PROG(yeah_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	tcp_vegas_pkts_acked(sk, sample);
}

SEC("struct_ops")
__u32 BPF_PROG(yeah_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops yeah = {
	.init = (void *)yeah_init,
	.ssthresh = (void *)yeah_ssthresh,
	.undo_cwnd = (void *)yeah_undo_cwnd,
	.cong_avoid = (void *)yeah_cong_avoid,
	.set_state = (void *)yeah_state,
	.cwnd_event = (void *)yeah_cwnd_event,
	.pkts_acked = (void *)yeah_pkts_acked,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "yeah",
};
