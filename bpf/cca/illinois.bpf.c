// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP Illinois as a BPF struct_ops congestion control: a port of the
 * kernel's net/ipv4/tcp_illinois.c (S. Liu, T. Basar, R. Srikant,
 * "TCP-Illinois: A Loss and Delay-Based Congestion Control Algorithm for
 * High-Speed Networks", VALUETOOLS 2006), function by function, for kernels
 * built without CONFIG_TCP_CONG_ILLINOIS. It registers as "illinois";
 * fatpipe loads it only where the kernel has none of its own.
 *
 * Where it departs from the C file:
 * * tcp_illinois_info() (get_info) is not ported: a BPF program cannot
 *   write the kernel's union tcp_cc_info, so TCP_CC_INFO returns nothing;
 * * module parameters win_thresh and theta are read-only globals with the
 *   module's defaults (15, 5);
 * * avg_delay()'s do_div() is a plain unsigned 64-bit division (BPF has
 *   one; the sum and the count are unsigned as in the C file);
 * * tcp_slow_start() and tcp_reno_undo_cwnd() are fatpipe's ports
 *   (fp_tcp_cong.h);
 * * registered with TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 */
#include "fp_tcp_cong.h"

#define ALPHA_SHIFT 7
#define ALPHA_SCALE (1u << ALPHA_SHIFT)
#define ALPHA_MIN ((3 * ALPHA_SCALE) / 10) /* ~0.3 */
#define ALPHA_MAX (10 * ALPHA_SCALE)       /* 10.0 */
#define ALPHA_BASE ALPHA_SCALE             /* 1.0 */
#define RTT_MAX (0xffffffffU / ALPHA_MAX)  /* 3.3 secs */

#define BETA_SHIFT 6
#define BETA_SCALE (1u << BETA_SHIFT)
#define BETA_MIN (BETA_SCALE / 8) /* 0.125 */
#define BETA_MAX (BETA_SCALE / 2) /* 0.5 */
#define BETA_BASE BETA_MAX

const volatile int win_thresh = 15; /* Window threshold for starting adaptive sizing */
const volatile int theta = 5;       /* # of fast RTT's before full growth */

/* TCP Illinois Parameters */
struct illinois {
	__u64 sum_rtt;  /* sum of rtt's measured within last rtt */
	__u16 cnt_rtt;  /* # of rtts measured within last rtt */
	__u32 base_rtt; /* min of all rtt in usec */
	__u32 max_rtt;  /* max of all rtt in usec */
	__u32 end_seq;  /* right edge of current RTT */
	__u32 alpha;    /* Additive increase */
	__u32 beta;     /* Muliplicative decrease */
	__u16 acked;    /* # packets acked by current ACK */
	__u8 rtt_above; /* average rtt has gone above threshold */
	__u8 rtt_low;   /* # of rtts measurements below threshold */
};

_Static_assert(sizeof(struct illinois) <= 104, "struct illinois must fit icsk_ca_priv");

/* rtt_reset() */
static __always_inline void rtt_reset(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct illinois *ca = inet_csk_ca(sk);

	ca->end_seq = tp->snd_nxt;
	ca->cnt_rtt = 0;
	ca->sum_rtt = 0;

	/* TODO: age max_rtt? */
}

/* tcp_illinois_init() */
SEC("struct_ops")
void BPF_PROG(illinois_init, struct sock *sk)
{
	struct illinois *ca = inet_csk_ca(sk);

	ca->alpha = ALPHA_MAX;
	ca->beta = BETA_BASE;
	ca->base_rtt = 0x7fffffff;
	ca->max_rtt = 0;

	ca->acked = 0;
	ca->rtt_low = 0;
	ca->rtt_above = 0;

	rtt_reset(sk);
}

/* tcp_illinois_acked(): measure RTT for each ack. */
SEC("struct_ops")
void BPF_PROG(illinois_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct illinois *ca = inet_csk_ca(sk);
	__s32 rtt_us = sample->rtt_us;

	ca->acked = sample->pkts_acked;

	/* dup ack, no rtt sample */
	if (rtt_us < 0)
		return;

	/* ignore bogus values, this prevents wraparound in alpha math */
	if (rtt_us > RTT_MAX)
		rtt_us = RTT_MAX;

	/* keep track of minimum RTT seen so far */
	if (ca->base_rtt > rtt_us)
		ca->base_rtt = rtt_us;

	/* and max */
	if (ca->max_rtt < rtt_us)
		ca->max_rtt = rtt_us;

	++ca->cnt_rtt;
	ca->sum_rtt += rtt_us;
}

/* max_delay(): maximum queuing delay */
static __always_inline __u32 max_delay(const struct illinois *ca)
{
	return ca->max_rtt - ca->base_rtt;
}

/* avg_delay(): average queuing delay */
static __always_inline __u32 avg_delay(const struct illinois *ca)
{
	__u64 t = ca->sum_rtt;

	t /= ca->cnt_rtt; /* do_div(t, ca->cnt_rtt) */
	return t - ca->base_rtt;
}

/* alpha(): additive increase. Reno's 1.0 for small windows; for larger
 * ones 10.0 while the average delay stays at its minimum, down to 0.3 as it
 * reaches the maximum (a convex window growth curve). */
static __always_inline __u32 alpha(struct illinois *ca, __u32 da, __u32 dm)
{
	__u32 d1 = dm / 100; /* Low threshold */

	if (da <= d1) {
		/* If never got out of low delay zone, then use max */
		if (!ca->rtt_above)
			return ALPHA_MAX;

		/* Wait for 5 good RTT's before allowing alpha to go alpha max.
		 * This prevents one good RTT from causing sudden window increase.
		 */
		if (++ca->rtt_low < theta)
			return ca->alpha;

		ca->rtt_low = 0;
		ca->rtt_above = 0;
		return ALPHA_MAX;
	}

	ca->rtt_above = 1;

	/* alpha = k1 / (k2 + da) with
	 * k1 = (dm - d1) amin amax / (amax - amin),
	 * k2 = (dm - d1) amin / (amax - amin) - d1 */
	dm -= d1;
	da -= d1;
	return (dm * ALPHA_MAX) / (dm + (da * (ALPHA_MAX - ALPHA_MIN)) / ALPHA_MIN);
}

/* beta(): multiplicative decrease: 1/8 below 10 % of the maximum delay, 1/2
 * above 80 %, linear in between. */
static __always_inline __u32 beta(__u32 da, __u32 dm)
{
	__u32 d2, d3;

	d2 = dm / 10;
	if (da <= d2)
		return BETA_MIN;

	d3 = (8 * dm) / 10;
	if (da >= d3 || d3 <= d2)
		return BETA_MAX;

	/* b = k3 + k4 da with k3 = (bmin d3 - bmax d2) / (d3 - d2),
	 * k4 = (bmax - bmin) / (d3 - d2) */
	return (BETA_MIN * d3 - BETA_MAX * d2 + (BETA_MAX - BETA_MIN) * da) / (d3 - d2);
}

/* update_params(): alpha and beta, once per RTT */
static __always_inline void update_params(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct illinois *ca = inet_csk_ca(sk);

	if (tp->snd_cwnd < win_thresh) {
		ca->alpha = ALPHA_BASE;
		ca->beta = BETA_BASE;
	} else if (ca->cnt_rtt > 0) {
		__u32 dm = max_delay(ca);
		__u32 da = avg_delay(ca);

		ca->alpha = alpha(ca, da, dm);
		ca->beta = beta(da, dm);
	}

	rtt_reset(sk);
}

/* tcp_illinois_state(): in case of loss, reset to default values */
SEC("struct_ops")
void BPF_PROG(illinois_state, struct sock *sk, __u8 new_state)
{
	struct illinois *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {
		ca->alpha = ALPHA_BASE;
		ca->beta = BETA_BASE;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		rtt_reset(sk);
	}
}

/* tcp_illinois_cong_avoid(): increase window in response to successful
 * acknowledgment. */
SEC("struct_ops")
void BPF_PROG(illinois_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct illinois *ca = inet_csk_ca(sk);

	if (after(ack, ca->end_seq))
		update_params(sk);

	/* RFC2861 only increase cwnd if fully utilized */
	if (!tcp_is_cwnd_limited(sk))
		return;

	/* In slow start */
	if (tcp_in_slow_start(tp))
		fp_tcp_slow_start(tp, acked);

	else {
		__u32 delta;

		/* snd_cwnd_cnt is # of packets since last cwnd increment */
		tp->snd_cwnd_cnt += ca->acked;
		ca->acked = 1;

		/* This is close approximation of:
		 * tp->snd_cwnd += alpha/tp->snd_cwnd
		 */
		delta = (tp->snd_cwnd_cnt * ca->alpha) >> ALPHA_SHIFT;
		if (delta >= tp->snd_cwnd) {
			tp->snd_cwnd = min(tp->snd_cwnd + delta / tp->snd_cwnd, (__u32)tp->snd_cwnd_clamp);
			tp->snd_cwnd_cnt = 0;
		}
	}
}

/* tcp_illinois_ssthresh() */
SEC("struct_ops")
__u32 BPF_PROG(illinois_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct illinois *ca = inet_csk_ca(sk);
	__u32 decr;

	/* Multiplicative decrease */
	decr = (tp->snd_cwnd * ca->beta) >> BETA_SHIFT;
	return max(tp->snd_cwnd - decr, 2U);
}

/* tcp_reno_undo_cwnd(), as the C file's .undo_cwnd */
SEC("struct_ops")
__u32 BPF_PROG(illinois_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops illinois = {
	.init = (void *)illinois_init,
	.ssthresh = (void *)illinois_ssthresh,
	.undo_cwnd = (void *)illinois_undo_cwnd,
	.cong_avoid = (void *)illinois_cong_avoid,
	.set_state = (void *)illinois_state,
	.pkts_acked = (void *)illinois_acked,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "illinois",
};
