// SPDX-License-Identifier: GPL-2.0-only
/*
 * H-TCP as a BPF struct_ops congestion control: a port of the kernel's
 * net/ipv4/tcp_htcp.c (R.N. Shorten, D.J. Leith, "H-TCP: TCP for high-speed
 * and long-distance networks", PFLDnet 2004), function by function, for
 * kernels built without CONFIG_TCP_CONG_HTCP. It registers as "htcp";
 * fatpipe loads it only where the kernel has no htcp of its own.
 *
 * Where it departs from the C file:
 * * module parameters use_rtt_scaling and use_bandwidth_switch are
 *   read-only globals with the module's defaults (1, 1);
 * * jiffies and tcp_jiffies32 come from bpf_jiffies64(), HZ from the
 *   kernel's Kconfig (fp_kernel.h); msecs_to_jiffies/usecs_to_jiffies round
 *   up as the kernel's do for an HZ that divides 1000;
 * * tcp_slow_start() and tcp_reno_undo_cwnd() are fatpipe's ports of the
 *   kernel functions (fp_tcp_cong.h), validated by fp_reno;
 * * registered with TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 * All arithmetic is u32 as in the C file; no floating point was needed.
 */
#include "fp_tcp_cong.h"

#define ALPHA_BASE (1 << 7) /* 1.0 with shift << 7 */
#define BETA_MIN (1 << 6)   /* 0.5 with shift << 7 */
#define BETA_MAX 102        /* 0.8 with shift << 7 */

const volatile int use_rtt_scaling = 1;
const volatile int use_bandwidth_switch = 1;

struct htcp {
	__u32 alpha;     /* Fixed point arith, << 7 */
	__u8 beta;       /* Fixed point arith, << 7 */
	__u8 modeswitch; /* Delay modeswitch until we had at least one congestion event */
	__u16 pkts_acked;
	__u32 packetcount;
	__u32 minRTT;
	__u32 maxRTT;
	__u32 last_cong; /* Time since last congestion event end */
	__u32 undo_last_cong;

	__u32 undo_maxRTT;
	__u32 undo_old_maxB;

	/* Bandwidth estimation */
	__u32 minB;
	__u32 maxB;
	__u32 old_maxB;
	__u32 Bi;
	__u32 lasttime;
};

_Static_assert(sizeof(struct htcp) <= 104, "struct htcp must fit icsk_ca_priv");

/* htcp_cong_time() */
static __always_inline __u32 htcp_cong_time(const struct htcp *ca)
{
	return jiffies - ca->last_cong;
}

/* htcp_ccount() */
static __always_inline __u32 htcp_ccount(const struct htcp *ca)
{
	return htcp_cong_time(ca) / ca->minRTT;
}

/* htcp_reset() */
static __always_inline void htcp_reset(struct htcp *ca)
{
	ca->undo_last_cong = ca->last_cong;
	ca->undo_maxRTT = ca->maxRTT;
	ca->undo_old_maxB = ca->old_maxB;

	ca->last_cong = jiffies;
}

/* htcp_cwnd_undo() */
SEC("struct_ops")
__u32 BPF_PROG(htcp_cwnd_undo, struct sock *sk)
{
	struct htcp *ca = inet_csk_ca(sk);

	if (ca->undo_last_cong) {
		ca->last_cong = ca->undo_last_cong;
		ca->maxRTT = ca->undo_maxRTT;
		ca->old_maxB = ca->undo_old_maxB;
		ca->undo_last_cong = 0;
	}

	return fp_tcp_reno_undo_cwnd(sk);
}

/* measure_rtt() */
static __always_inline void measure_rtt(struct sock *sk, __u32 srtt)
{
	struct htcp *ca = inet_csk_ca(sk);

	/* keep track of minimum RTT seen so far, minRTT is zero at first */
	if (ca->minRTT > srtt || !ca->minRTT)
		ca->minRTT = srtt;

	/* max RTT */
	if (icsk_ca_state(sk) == TCP_CA_Open) {
		if (ca->maxRTT < ca->minRTT)
			ca->maxRTT = ca->minRTT;
		if (ca->maxRTT < srtt && srtt <= ca->maxRTT + msecs_to_jiffies(20))
			ca->maxRTT = srtt;
	}
}

/* measure_achieved_throughput(): the pkts_acked hook */
SEC("struct_ops")
void BPF_PROG(htcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);
	__u32 now = tcp_jiffies32;
	__u8 state = icsk_ca_state(sk);

	if (state == TCP_CA_Open)
		ca->pkts_acked = sample->pkts_acked;

	if (sample->rtt_us > 0)
		measure_rtt(sk, usecs_to_jiffies(sample->rtt_us));

	if (!use_bandwidth_switch)
		return;

	/* achieved throughput calculations */
	if (!((1 << state) & (TCPF_CA_Open | TCPF_CA_Disorder))) {
		ca->packetcount = 0;
		ca->lasttime = now;
		return;
	}

	ca->packetcount += sample->pkts_acked;

	if (ca->packetcount >= tp->snd_cwnd - (ca->alpha >> 7 ? : 1) &&
	    now - ca->lasttime >= ca->minRTT && ca->minRTT > 0) {
		__u32 cur_Bi = ca->packetcount * HZ / (now - ca->lasttime);

		if (htcp_ccount(ca) <= 3) {
			/* just after backoff */
			ca->minB = ca->maxB = ca->Bi = cur_Bi;
		} else {
			ca->Bi = (3 * ca->Bi + cur_Bi) / 4;
			if (ca->Bi > ca->maxB)
				ca->maxB = ca->Bi;
			if (ca->minB > ca->maxB)
				ca->minB = ca->maxB;
		}
		ca->packetcount = 0;
		ca->lasttime = now;
	}
}

/* htcp_beta_update() */
static __always_inline void htcp_beta_update(struct htcp *ca, __u32 minRTT, __u32 maxRTT)
{
	if (use_bandwidth_switch) {
		__u32 maxB = ca->maxB;
		__u32 old_maxB = ca->old_maxB;

		ca->old_maxB = ca->maxB;
		if (!between(5 * maxB, 4 * old_maxB, 6 * old_maxB)) {
			ca->beta = BETA_MIN;
			ca->modeswitch = 0;
			return;
		}
	}

	if (ca->modeswitch && minRTT > msecs_to_jiffies(10) && maxRTT) {
		ca->beta = (minRTT << 7) / maxRTT;
		if (ca->beta < BETA_MIN)
			ca->beta = BETA_MIN;
		else if (ca->beta > BETA_MAX)
			ca->beta = BETA_MAX;
	} else {
		ca->beta = BETA_MIN;
		ca->modeswitch = 1;
	}
}

/* htcp_alpha_update() */
static __always_inline void htcp_alpha_update(struct htcp *ca)
{
	__u32 minRTT = ca->minRTT;
	__u32 factor = 1;
	__u32 diff = htcp_cong_time(ca);

	if (diff > HZ) {
		diff -= HZ;
		factor = 1 + (10 * diff + ((diff / 2) * (diff / 2) / HZ)) / HZ;
	}

	if (use_rtt_scaling && minRTT) {
		__u32 scale = (HZ << 3) / (10 * minRTT);

		/* clamping ratio to interval [0.5,10]<<3 */
		scale = min(max(scale, 1U << 2), 10U << 3);
		factor = (factor << 3) / scale;
		if (!factor)
			factor = 1;
	}

	ca->alpha = 2 * factor * ((1 << 7) - ca->beta);
	if (!ca->alpha)
		ca->alpha = ALPHA_BASE;
}

/* htcp_param_update(): called at a congestion event, when maxRTT is known */
static __always_inline void htcp_param_update(struct sock *sk)
{
	struct htcp *ca = inet_csk_ca(sk);
	__u32 minRTT = ca->minRTT;
	__u32 maxRTT = ca->maxRTT;

	htcp_beta_update(ca, minRTT, maxRTT);
	htcp_alpha_update(ca);

	/* add slowly fading memory for maxRTT to accommodate routing changes */
	if (minRTT > 0 && maxRTT > minRTT)
		ca->maxRTT = minRTT + ((maxRTT - minRTT) * 95) / 100;
}

/* htcp_recalc_ssthresh() */
SEC("struct_ops")
__u32 BPF_PROG(htcp_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct htcp *ca = inet_csk_ca(sk);

	htcp_param_update(sk);
	return max((tp->snd_cwnd * ca->beta) >> 7, 2U);
}

/* htcp_cong_avoid() */
SEC("struct_ops")
void BPF_PROG(htcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		fp_tcp_slow_start(tp, acked);
	} else {
		/* In dangerous area, increase slowly.
		 * In theory this is tp->snd_cwnd += alpha / tp->snd_cwnd
		 */
		if ((tp->snd_cwnd_cnt * ca->alpha) >> 7 >= tp->snd_cwnd) {
			if (tp->snd_cwnd < tp->snd_cwnd_clamp)
				tp->snd_cwnd = tp->snd_cwnd + 1;
			tp->snd_cwnd_cnt = 0;
			htcp_alpha_update(ca);
		} else {
			tp->snd_cwnd_cnt += ca->pkts_acked;
		}

		ca->pkts_acked = 1;
	}
}

/* htcp_init() */
SEC("struct_ops")
void BPF_PROG(htcp_init, struct sock *sk)
{
	struct htcp *ca = inet_csk_ca(sk);

	__builtin_memset(ca, 0, sizeof(struct htcp));
	ca->alpha = ALPHA_BASE;
	ca->beta = BETA_MIN;
	ca->pkts_acked = 1;
	ca->last_cong = jiffies;
}

/* htcp_state() */
SEC("struct_ops")
void BPF_PROG(htcp_state, struct sock *sk, __u8 new_state)
{
	struct htcp *ca = inet_csk_ca(sk);

	switch (new_state) {
	case TCP_CA_Open:
		if (ca->undo_last_cong) {
			ca->last_cong = jiffies;
			ca->undo_last_cong = 0;
		}
		break;
	case TCP_CA_CWR:
	case TCP_CA_Recovery:
	case TCP_CA_Loss:
		htcp_reset(ca);
		break;
	}
}

SEC(".struct_ops.link")
struct tcp_congestion_ops htcp = {
	.init = (void *)htcp_init,
	.ssthresh = (void *)htcp_recalc_ssthresh,
	.cong_avoid = (void *)htcp_cong_avoid,
	.set_state = (void *)htcp_state,
	.undo_cwnd = (void *)htcp_cwnd_undo,
	.pkts_acked = (void *)htcp_pkts_acked,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "htcp",
};
