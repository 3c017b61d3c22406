// SPDX-License-Identifier: GPL-2.0-only
/*
 * fp_reno: a BPF port of the kernel's "reno" (net/ipv4/tcp_cong.c struct
 * tcp_congestion_ops tcp_reno), registered under its own name. It exists
 * only to validate the porting method: on the kernel backend its goodput and
 * retransmissions must match the built-in reno's (docs/bpf-ccas.md).
 */
#include "fp_tcp_cong.h"

SEC("struct_ops")
__u32 BPF_PROG(fp_reno_ssthresh, struct sock *sk)
{
	return fp_tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(fp_reno_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	fp_tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(fp_reno_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

/* tcp_reno has TCP_CONG_NON_RESTRICTED too. */
SEC(".struct_ops.link")
struct tcp_congestion_ops fp_reno = {
	.ssthresh = (void *)fp_reno_ssthresh,
	.cong_avoid = (void *)fp_reno_cong_avoid,
	.undo_cwnd = (void *)fp_reno_undo_cwnd,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "fp_reno",
};
