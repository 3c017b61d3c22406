// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP Vegas as a BPF struct_ops congestion control: a port of the kernel's
 * net/ipv4/tcp_vegas.c (L. S. Brakmo, L. L. Peterson, "TCP Vegas: End to
 * end congestion avoidance on a global internet", IEEE JSAC 13(8), 1995),
 * function by function, for kernels built without CONFIG_TCP_CONG_VEGAS. It
 * registers as "vegas"; fatpipe loads it only where the kernel has none of
 * its own. The RTT bookkeeping it shares with YeAH is in fp_tcp_vegas.h.
 *
 * Where it departs from the C file:
 * * tcp_vegas_get_info() is not ported: a BPF program cannot write the
 *   kernel's union tcp_cc_info, so TCP_CC_INFO returns nothing;
 * * module parameters alpha, beta and gamma are read-only globals with
 *   the module's defaults (2, 4, 1);
 * * do_div() is a plain unsigned 64-bit division (BPF has one);
 * * tcp_slow_start(), tcp_reno_cong_avoid(), tcp_reno_ssthresh() and
 *   tcp_reno_undo_cwnd() are fatpipe's ports (fp_tcp_cong.h);
 * * registered with TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 */
#include "fp_tcp_vegas.h"

const volatile int alpha = 2; /* lower bound of packets in network */
const volatile int beta = 4;  /* upper bound of packets in network */
const volatile int gamma = 1; /* limit on increase (scale by 2) */

_Static_assert(sizeof(struct vegas) <= 104, "struct vegas must fit icsk_ca_priv");

/* tcp_vegas_init() */
SEC("struct_ops")
void BPF_PROG(vegas_init, struct sock *sk)
{
	tcp_vegas_init(sk);
}

/* tcp_vegas_pkts_acked() */
SEC("struct_ops")
void BPF_PROG(vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	tcp_vegas_pkts_acked(sk, sample);
}

/* tcp_vegas_state() */
SEC("struct_ops")
void BPF_PROG(vegas_state, struct sock *sk, __u8 ca_state)
{
	tcp_vegas_state(sk, ca_state);
}

/* tcp_vegas_cwnd_event() */
SEC("struct_ops")
void BPF_PROG(vegas_cwnd_event, struct sock *sk, int event)
{
	tcp_vegas_cwnd_event(sk, event);
}

/* tcp_vegas_ssthresh() */
static __always_inline __u32 tcp_vegas_ssthresh(struct tcp_sock *tp)
{
	return min(tp->snd_ssthresh, tp->snd_cwnd);
}

/* tcp_vegas_cong_avoid() */
SEC("struct_ops")
void BPF_PROG(vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *vegas = inet_csk_ca(sk);

	if (!vegas->doing_vegas_now) {
		fp_tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}

	if (after(ack, vegas->beg_snd_nxt)) {
		/* Do the Vegas once-per-RTT cwnd adjustment. */

		/* Save the extent of the current window so we can use this
		 * at the end of the next RTT. */
		vegas->beg_snd_nxt = tp->snd_nxt;

		/* Only with more than 2 RTT samples: with 2 or fewer we get
		 * only 1 ACK per RTT, almost certainly delayed ACKs. */
		if (vegas->cntRTT <= 2) {
			/* Not enough RTT samples: behave like Reno. */
			fp_tcp_reno_cong_avoid(sk, ack, acked);
		} else {
			__u32 rtt, diff;
			__u64 target_cwnd;

			/* The min RTT seen during the last RTT: filters out
			 * delayed ACKs, at the cost of noticing congestion a
			 * bit later. */
			rtt = vegas->minRTT;

			/* The cwnd we should have, if we weren't going too
			 * fast: (actual rate in segments) * baseRTT */
			target_cwnd = (__u64)tp->snd_cwnd * vegas->baseRTT;
			target_cwnd /= rtt; /* do_div(target_cwnd, rtt) */

			/* The "Diff" of the Arizona Vegas papers: the window
			 * we had minus the window we would like to have. */
			diff = tp->snd_cwnd * (rtt - vegas->baseRTT) / vegas->baseRTT;

			if (diff > gamma && tcp_in_slow_start(tp)) {
				/* Going too fast. Time to slow down and switch
				 * to congestion avoidance: cwnd to match the
				 * actual rate exactly, plus 1 because the integer
				 * truncation robs us of full link utilization. */
				tp->snd_cwnd = min(tp->snd_cwnd, (__u32)target_cwnd + 1);
				tp->snd_ssthresh = tcp_vegas_ssthresh(tp);

			} else if (tcp_in_slow_start(tp)) {
				/* Slow start.  */
				fp_tcp_slow_start(tp, acked);
			} else {
				/* Congestion avoidance. */
				if (diff > beta) {
					/* The old window was too fast, so we
					 * slow down. */
					tp->snd_cwnd = tp->snd_cwnd - 1;
					tp->snd_ssthresh = tcp_vegas_ssthresh(tp);
				} else if (diff < alpha) {
					/* We don't have enough extra packets
					 * in the network, so speed up. */
					tp->snd_cwnd = tp->snd_cwnd + 1;
				} else {
					/* Sending just as fast as we should be. */
				}
			}

			if (tp->snd_cwnd < 2)
				tp->snd_cwnd = 2;
			else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
				tp->snd_cwnd = tp->snd_cwnd_clamp;

			tp->snd_ssthresh = tcp_current_ssthresh(sk);
		}

		/* Wipe the slate clean for the next RTT. */
		vegas->cntRTT = 0;
		vegas->minRTT = 0x7fffffff;
	}
	/* Use normal slow start */
	else if (tcp_in_slow_start(tp))
		fp_tcp_slow_start(tp, acked);
}

/* tcp_reno_ssthresh() and tcp_reno_undo_cwnd(): the C file's .ssthresh
 * and .undo_cwnd */
SEC("struct_ops")
__u32 BPF_PROG(vegas_ssthresh, struct sock *sk)
{
	return fp_tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
__u32 BPF_PROG(vegas_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops vegas = {
	.init = (void *)vegas_init,
	.ssthresh = (void *)vegas_ssthresh,
	.undo_cwnd = (void *)vegas_undo_cwnd,
	.cong_avoid = (void *)vegas_cong_avoid,
	.pkts_acked = (void *)vegas_pkts_acked,
	.set_state = (void *)vegas_state,
	.cwnd_event = (void *)vegas_cwnd_event,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "vegas",
};
