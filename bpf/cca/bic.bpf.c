// SPDX-License-Identifier: GPL-2.0-only
/*
 * BIC TCP as a BPF struct_ops congestion control: a port of the kernel's
 * net/ipv4/tcp_bic.c (L. Xu, K. Harfoush, I. Rhee, "Binary Increase
 * Congestion Control for Fast, Long Distance Networks", INFOCOM 2004),
 * function by function, for kernels built without CONFIG_TCP_CONG_BIC. It
 * registers as "bic"; fatpipe loads it only where the kernel has none of its
 * own.
 *
 * Where it departs from the C file:
 * * module parameters are read-only globals with the module's defaults
 *   (fast_convergence 1, max_increment 16, low_window 14, beta 819,
 *   initial_ssthresh 0, smooth_part 20);
 * * tcp_jiffies32 comes from bpf_jiffies64(); HZ / 32 divides the unsigned
 *   Kconfig value (fp_kernel.h: BPF has no signed division);
 * * tcp_slow_start(), tcp_cong_avoid_ai() and tcp_reno_undo_cwnd() are
 *   fatpipe's ports (fp_tcp_cong.h);
 * * registered with TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 * All arithmetic is u32 as in the C file.
 */
#include "fp_tcp_cong.h"

#define BICTCP_BETA_SCALE 1024 /* Scale factor beta calculation max_cwnd = snd_cwnd * beta */
#define BICTCP_B 4             /* In binary search, go to point (max+min)/N */

const volatile int fast_convergence = 1;
const volatile unsigned int max_increment = 16;
const volatile int low_window = 14;
const volatile int beta = 819; /* = 819/1024 (BICTCP_BETA_SCALE) */
const volatile int initial_ssthresh = 0;
const volatile int smooth_part = 20;

/* BIC TCP Parameters */
struct bictcp {
	__u32 cnt;           /* increase cwnd by 1 after ACKs */
	__u32 last_max_cwnd; /* last maximum snd_cwnd */
	__u32 last_cwnd;     /* the last snd_cwnd */
	__u32 last_time;     /* time when updated last_cwnd */
	__u32 epoch_start;   /* beginning of an epoch */
#define ACK_RATIO_SHIFT 4
	__u32 delayed_ack; /* estimate the ratio of Packets/ACKs << 4 */
};

_Static_assert(sizeof(struct bictcp) <= 104, "struct bictcp must fit icsk_ca_priv");

/* bictcp_reset() */
static __always_inline void bictcp_reset(struct bictcp *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->epoch_start = 0;
	ca->delayed_ack = 2 << ACK_RATIO_SHIFT;
}

/* bictcp_init() */
SEC("struct_ops")
void BPF_PROG(bic_init, struct sock *sk)
{
	struct bictcp *ca = inet_csk_ca(sk);

	bictcp_reset(ca);

	if (initial_ssthresh)
		tcp_sk(sk)->snd_ssthresh = initial_ssthresh;
}

/* bictcp_update(): compute congestion window to use. */
static __always_inline void bictcp_update(struct bictcp *ca, __u32 cwnd)
{
	if (ca->last_cwnd == cwnd &&
	    (__s32)(tcp_jiffies32 - ca->last_time) <= (int)(CONFIG_HZ / 32))
		return;

	ca->last_cwnd = cwnd;
	ca->last_time = tcp_jiffies32;

	if (ca->epoch_start == 0) /* record the beginning of an epoch */
		ca->epoch_start = tcp_jiffies32;

	/* start off normal */
	if (cwnd <= low_window) {
		ca->cnt = cwnd;
		return;
	}

	/* binary increase */
	if (cwnd < ca->last_max_cwnd) {
		__u32 dist = (ca->last_max_cwnd - cwnd) / BICTCP_B;

		if (dist > max_increment)
			/* linear increase */
			ca->cnt = cwnd / max_increment;
		else if (dist <= 1U)
			/* binary search increase */
			ca->cnt = (cwnd * smooth_part) / BICTCP_B;
		else
			/* binary search increase */
			ca->cnt = cwnd / dist;
	} else {
		/* slow start AMD linear increase */
		if (cwnd < ca->last_max_cwnd + BICTCP_B)
			/* slow start */
			ca->cnt = (cwnd * smooth_part) / BICTCP_B;
		else if (cwnd < ca->last_max_cwnd + max_increment * (BICTCP_B - 1))
			/* slow start */
			ca->cnt = (cwnd * (BICTCP_B - 1)) / (cwnd - ca->last_max_cwnd);
		else
			/* linear increase */
			ca->cnt = cwnd / max_increment;
	}

	/* if in slow start or link utilization is very low */
	if (ca->last_max_cwnd == 0) {
		if (ca->cnt > 20) /* increase cwnd 5% per RTT */
			ca->cnt = 20;
	}

	ca->cnt = (ca->cnt << ACK_RATIO_SHIFT) / ca->delayed_ack;
	if (ca->cnt == 0) /* cannot be zero */
		ca->cnt = 1;
}

/* bictcp_cong_avoid() */
SEC("struct_ops")
void BPF_PROG(bic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		acked = fp_tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}
	bictcp_update(ca, tp->snd_cwnd);
	fp_tcp_cong_avoid_ai(tp, ca->cnt, acked);
}

/* bictcp_recalc_ssthresh(): behave like Reno until low_window is reached,
 * then increase congestion window slowly */
SEC("struct_ops")
__u32 BPF_PROG(bic_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd;

	ca->epoch_start = 0; /* end of epoch */

	/* Wmax and fast convergence */
	if (cwnd < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = (cwnd * (BICTCP_BETA_SCALE + beta)) / (2 * BICTCP_BETA_SCALE);
	else
		ca->last_max_cwnd = cwnd;

	if (cwnd <= low_window)
		return max(cwnd >> 1U, 2U);
	else
		return max((cwnd * beta) / BICTCP_BETA_SCALE, 2U);
}

/* bictcp_state() */
SEC("struct_ops")
void BPF_PROG(bic_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss)
		bictcp_reset(inet_csk_ca(sk));
}

/* bictcp_acked(): track delayed acknowledgment ratio using sliding window
 * ratio = (15*ratio + sample) / 16 */
SEC("struct_ops")
void BPF_PROG(bic_acked, struct sock *sk, const struct ack_sample *sample)
{
	if (icsk_ca_state(sk) == TCP_CA_Open) {
		struct bictcp *ca = inet_csk_ca(sk);

		ca->delayed_ack += sample->pkts_acked - (ca->delayed_ack >> ACK_RATIO_SHIFT);
	}
}

/* tcp_reno_undo_cwnd(), as the C file's .undo_cwnd */
SEC("struct_ops")
__u32 BPF_PROG(bic_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops bic = {
	.init = (void *)bic_init,
	.ssthresh = (void *)bic_recalc_ssthresh,
	.cong_avoid = (void *)bic_cong_avoid,
	.set_state = (void *)bic_state,
	.undo_cwnd = (void *)bic_undo_cwnd,
	.pkts_acked = (void *)bic_acked,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "bic",
};
