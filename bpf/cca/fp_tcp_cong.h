/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Ports of the kernel's shared congestion-control helpers, used by every
 * fatpipe BPF CCA instead of the kfuncs of the same name so that the fp_reno
 * validation port exercises the same code the other ports run:
 * include/net/tcp.h tcp_in_slow_start(), tcp_is_cwnd_limited();
 * net/ipv4/tcp_cong.c tcp_slow_start(), tcp_cong_avoid_ai(),
 * tcp_reno_cong_avoid(), tcp_reno_ssthresh(), tcp_reno_undo_cwnd().
 */
#ifndef FP_TCP_CONG_H
#define FP_TCP_CONG_H

#include "fp_kernel.h"

/* include/net/tcp.h tcp_in_slow_start() */
static __always_inline int tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* include/net/tcp.h tcp_is_cwnd_limited() */
static __always_inline int tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return 1;
	/* If in slow start, ensure cwnd grows to twice what was ACKed. */
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return 0;
}

/* net/ipv4/tcp_cong.c tcp_slow_start() */
static __always_inline __u32 fp_tcp_slow_start(struct tcp_sock *tp, __u32 acked)
{
	__u32 cwnd = min(tp->snd_cwnd + acked, tp->snd_ssthresh);

	acked -= cwnd - tp->snd_cwnd;
	tp->snd_cwnd = min(cwnd, tp->snd_cwnd_clamp);
	return acked;
}

/* net/ipv4/tcp_cong.c tcp_cong_avoid_ai(): in theory cwnd += 1/w per
 * packet ACKed. */
static __always_inline void fp_tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked)
{
	/* If credits accumulated at a higher w, apply them gently now. */
	if (tp->snd_cwnd_cnt >= w) {
		tp->snd_cwnd_cnt = 0;
		tp->snd_cwnd = tp->snd_cwnd + 1;
	}

	tp->snd_cwnd_cnt += acked;
	if (tp->snd_cwnd_cnt >= w) {
		__u32 delta = tp->snd_cwnd_cnt / w;

		tp->snd_cwnd_cnt -= delta * w;
		tp->snd_cwnd = tp->snd_cwnd + delta;
	}
	tp->snd_cwnd = min(tp->snd_cwnd, tp->snd_cwnd_clamp);
}

/* net/ipv4/tcp_cong.c tcp_reno_cong_avoid(): Jacobson's slow start and
 * congestion avoidance. */
static __always_inline void fp_tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	/* In "safe" area, increase. */
	if (tcp_in_slow_start(tp)) {
		acked = fp_tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	/* In dangerous area, increase slowly. */
	fp_tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* net/ipv4/tcp_cong.c tcp_reno_ssthresh(): half the window, at least 2. */
static __always_inline __u32 fp_tcp_reno_ssthresh(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return max(tp->snd_cwnd >> 1U, 2U);
}

/* net/ipv4/tcp_cong.c tcp_reno_undo_cwnd() */
static __always_inline __u32 fp_tcp_reno_undo_cwnd(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return max(tp->snd_cwnd, tp->prior_cwnd);
}

char _license[] SEC("license") = "GPL";

#endif
