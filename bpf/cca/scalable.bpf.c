// SPDX-License-Identifier: GPL-2.0-only
/*
 * Scalable TCP as a BPF struct_ops congestion control: a port of the
 * kernel's net/ipv4/tcp_scalable.c (T. Kelly, "Scalable TCP: Improving
 * Performance in Highspeed Wide Area Networks", CCR 2003), function by
 * function, for kernels built without CONFIG_TCP_CONG_SCALABLE. It registers
 * as "scalable"; fatpipe loads it only where the kernel has none of its own.
 *
 * Where it departs from the C file:
 * * tcp_slow_start(), tcp_cong_avoid_ai() and tcp_reno_undo_cwnd() are
 *   fatpipe's ports of the kernel functions (fp_tcp_cong.h), validated by
 *   fp_reno;
 * * registered with TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 * Otherwise none: the C file is two functions of u32 arithmetic.
 */
#include "fp_tcp_cong.h"

/* These factors derived from the recommended values in the paper:
 * .01 and 7/8 (older kernels used 50 for the increase, allowing for delayed
 * ACKs; the current file and fatpipe's simulator use 100). */
#define TCP_SCALABLE_AI_CNT 100U
#define TCP_SCALABLE_MD_SCALE 3

/* tcp_scalable_cong_avoid() */
SEC("struct_ops")
void BPF_PROG(scalable_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		acked = fp_tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	fp_tcp_cong_avoid_ai(tp, min(tp->snd_cwnd, TCP_SCALABLE_AI_CNT), acked);
}

/* tcp_scalable_ssthresh() */
SEC("struct_ops")
__u32 BPF_PROG(scalable_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return max(tp->snd_cwnd - (tp->snd_cwnd >> TCP_SCALABLE_MD_SCALE), 2U);
}

/* tcp_reno_undo_cwnd(), as the C file's .undo_cwnd */
SEC("struct_ops")
__u32 BPF_PROG(scalable_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops scalable = {
	.ssthresh = (void *)scalable_ssthresh,
	.undo_cwnd = (void *)scalable_undo_cwnd,
	.cong_avoid = (void *)scalable_cong_avoid,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "scalable",
};
