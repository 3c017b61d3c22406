// SPDX-License-Identifier: GPL-2.0-only
/*
 * fp_cubic: a BPF port of the kernel's CUBIC with HyStart (net/ipv4/
 * tcp_cubic.c, "CUBIC TCP v2.3", as in Linux 6.18), registered under its
 * own name. It exists to validate the porting method against the built-in
 * cubic on the kernel backend (docs/bpf-ccas.md), so it follows the C file
 * function by function.
 *
 * Where it departs from the C file:
 * * module parameters are read-only globals with the module's defaults;
 *   cube_rtt_scale, beta_scale and cube_factor, which cubictcp_register()
 *   computes at load, are compile-time constants from the same formulas;
 * * cubic_root(): fls64() by halving (BPF has no clz); the table index is
 *   masked to 0..63, which it always is, so the verifier can see it;
 * * bictcp_update(): the TCP-friendliness `while` loop, which the verifier
 *   cannot bound, is its closed form (same counts: subtract delta while
 *   ack_cnt > delta);
 * * the NET_INC_STATS HyStart counters (LINUX_MIB_TCPHYSTART*) are not
 *   counted: a BPF program cannot reach them;
 * * tcp_slow_start(), tcp_cong_avoid_ai() and tcp_reno_undo_cwnd() are
 *   fatpipe's ports (fp_tcp_cong.h).
 */
#include "fp_tcp_cong.h"

#define BICTCP_BETA_SCALE 1024 /* Scale factor beta calculation max_cwnd = snd_cwnd * beta */
#define BICTCP_HZ 10           /* BIC HZ 2^10 = 1024 */

/* Two methods of hybrid slow start */
#define HYSTART_ACK_TRAIN 0x1
#define HYSTART_DELAY 0x2

/* Number of delay samples for detecting the increase of delay */
#define HYSTART_MIN_SAMPLES 8
#define HYSTART_DELAY_MIN (4000U)  /* 4 ms */
#define HYSTART_DELAY_MAX (16000U) /* 16 ms */
#define HYSTART_DELAY_THRESH(x) min(max((x), HYSTART_DELAY_MIN), HYSTART_DELAY_MAX)

const volatile int fast_convergence = 1;
#define beta 717 /* = 717/1024 (BICTCP_BETA_SCALE); read-only in the module too */
const volatile int initial_ssthresh = 0;
#define bic_scale 41
const volatile int tcp_friendliness = 1;

const volatile int hystart = 1;
const volatile int hystart_detect = HYSTART_ACK_TRAIN | HYSTART_DELAY;
const volatile int hystart_low_window = 16;
const volatile int hystart_ack_delta_us = 2000;

/* cubictcp_register(): precomputed scale factors */
#define beta_scale (8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta))
#define cube_rtt_scale (bic_scale * 10) /* 1024*c/rtt */
/* 1/c * 2^2*bictcp_HZ * srtt, divided by bic_scale and the constant srtt (100 ms) */
#define cube_factor ((1ULL << (10 + 3 * BICTCP_HZ)) / (bic_scale * 10))

/* BIC TCP Parameters */
struct bictcp {
	__u32 cnt;              /* increase cwnd by 1 after ACKs */
	__u32 last_max_cwnd;    /* last maximum snd_cwnd */
	__u32 last_cwnd;        /* the last snd_cwnd */
	__u32 last_time;        /* time when updated last_cwnd */
	__u32 bic_origin_point; /* origin point of bic function */
	__u32 bic_K;            /* time to origin point from the beginning of the current epoch */
	__u32 delay_min;        /* min delay (usec) */
	__u32 epoch_start;      /* beginning of an epoch */
	__u32 ack_cnt;          /* number of acks */
	__u32 tcp_cwnd;         /* estimated tcp cwnd */
	__u16 unused;
	__u8 sample_cnt;        /* number of samples to decide curr_rtt */
	__u8 found;             /* the exit point is found? */
	__u32 round_start;      /* beginning of each round */
	__u32 end_seq;          /* end_seq of the round */
	__u32 last_ack;         /* last time when the ACK spacing is close */
	__u32 curr_rtt;         /* the minimum rtt of current round */
};

_Static_assert(sizeof(struct bictcp) <= 104, "struct bictcp must fit icsk_ca_priv");

/* bictcp_reset() */
static __always_inline void bictcp_reset(struct bictcp *ca)
{
	__builtin_memset(ca, 0, __builtin_offsetof(struct bictcp, unused));
	ca->found = 0;
}

/* bictcp_clock_us() */
static __always_inline __u32 bictcp_clock_us(const struct sock *sk)
{
	return (__u32)tcp_sk(sk)->tcp_mstamp;
}

/* bictcp_hystart_reset() */
static __always_inline void bictcp_hystart_reset(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);

	ca->round_start = ca->last_ack = bictcp_clock_us(sk);
	ca->end_seq = tp->snd_nxt;
	ca->curr_rtt = ~0U;
	ca->sample_cnt = 0;
}

/* cubictcp_init() */
SEC("struct_ops")
void BPF_PROG(fp_cubic_init, struct sock *sk)
{
	struct bictcp *ca = inet_csk_ca(sk);

	bictcp_reset(ca);

	if (hystart)
		bictcp_hystart_reset(sk);

	if (!hystart && initial_ssthresh)
		tcp_sk(sk)->snd_ssthresh = initial_ssthresh;
}

/* cubictcp_cwnd_event(): CA_EVENT_TX_START after an idle period */
SEC("struct_ops")
void BPF_PROG(fp_cubic_cwnd_event, struct sock *sk, int event)
{
	if (event == CA_EVENT_TX_START) {
		struct bictcp *ca = inet_csk_ca(sk);
		__u32 now = tcp_jiffies32;
		__s32 delta;

		delta = now - tcp_sk(sk)->lsndtime;

		/* We were application limited (idle) for a while.
		 * Shift epoch_start to keep cwnd growth to cubic curve.
		 */
		if (ca->epoch_start && delta > 0) {
			ca->epoch_start += delta;
			if (after(ca->epoch_start, now))
				ca->epoch_start = now;
		}
		return;
	}
}

/* cbrt(x) MSB values for x MSB values in [0..63] (cubic_root()'s table) */
static const __u8 cbrt_v[64] = {
	/* 0x00 */ 0,   54,  54,  54,  118, 118, 118, 118,
	/* 0x08 */ 123, 129, 134, 138, 143, 147, 151, 156,
	/* 0x10 */ 157, 161, 164, 168, 170, 173, 176, 179,
	/* 0x18 */ 181, 185, 187, 190, 192, 194, 197, 199,
	/* 0x20 */ 200, 202, 204, 206, 209, 211, 213, 215,
	/* 0x28 */ 217, 219, 221, 222, 224, 225, 227, 229,
	/* 0x30 */ 231, 232, 234, 236, 237, 239, 240, 242,
	/* 0x38 */ 244, 245, 246, 248, 250, 251, 252, 254,
};

/* cubic_root(): table lookup and one Newton-Raphson iteration */
static __always_inline __u32 cubic_root(__u64 a)
{
	__u32 x, b, shift;

	b = fls64(a);
	if (b < 7) {
		/* a in [0..63] */
		return ((__u32)cbrt_v[(__u32)a & 63] + 35) >> 6;
	}

	b = ((b * 84) >> 8) - 1;
	shift = (a >> (b * 3));

	x = ((__u32)(((__u32)cbrt_v[shift & 63] + 10) << b)) >> 6;

	/* x_{k+1} = (2 * x_k + a / x_k^2) / 3 */
	x = (2 * x + (__u32)(a / ((__u64)x * (__u64)(x - 1))));
	x = ((x * 341) >> 10);
	return x;
}

/* bictcp_update(): compute the congestion window to use */
static __always_inline void bictcp_update(struct bictcp *ca, __u32 cwnd, __u32 acked)
{
	__u32 delta, bic_target, max_cnt;
	__u64 offs, t;
	__u32 now = tcp_jiffies32;

	ca->ack_cnt += acked; /* count the number of ACKed packets */

	if (ca->last_cwnd == cwnd && (__s32)(now - ca->last_time) <= (int)(CONFIG_HZ / 32))
		return;

	/* The CUBIC function can update ca->cnt at most once per jiffy.
	 * On all cwnd reduction events, ca->epoch_start is set to 0,
	 * which will force a recalculation of ca->cnt.
	 */
	if (ca->epoch_start && now == ca->last_time)
		goto tcp_friendliness;

	ca->last_cwnd = cwnd;
	ca->last_time = now;

	if (ca->epoch_start == 0) {
		ca->epoch_start = now; /* record beginning */
		ca->ack_cnt = acked;   /* start counting */
		ca->tcp_cwnd = cwnd;   /* syn with cubic */

		if (ca->last_max_cwnd <= cwnd) {
			ca->bic_K = 0;
			ca->bic_origin_point = cwnd;
		} else {
			/* Compute new K based on
			 * (wmax-cwnd) * (srtt>>3 / HZ) / c * 2^(3*bictcp_HZ)
			 */
			ca->bic_K = cubic_root(cube_factor * (ca->last_max_cwnd - cwnd));
			ca->bic_origin_point = ca->last_max_cwnd;
		}
	}

	/* cubic function - calc: c * time^3 / rtt, time = (t - K) / 2^bictcp_HZ */
	t = (__s32)(now - ca->epoch_start);
	t += usecs_to_jiffies(ca->delay_min);
	/* change the unit from HZ to bictcp_HZ */
	t <<= BICTCP_HZ;
	t /= (__u64)CONFIG_HZ;

	if (t < ca->bic_K) /* t - K */
		offs = ca->bic_K - t;
	else
		offs = t - ca->bic_K;

	/* c/rtt * (t-K)^3 */
	delta = (cube_rtt_scale * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
	if (t < ca->bic_K) /* below origin*/
		bic_target = ca->bic_origin_point - delta;
	else /* above origin*/
		bic_target = ca->bic_origin_point + delta;

	/* cubic function - calc bictcp_cnt*/
	if (bic_target > cwnd)
		ca->cnt = cwnd / (bic_target - cwnd);
	else
		ca->cnt = 100 * cwnd; /* very small increment*/

	/* The initial growth of cubic function may be too conservative
	 * when the available bandwidth is still unknown.
	 */
	if (ca->last_max_cwnd == 0 && ca->cnt > 20)
		ca->cnt = 20; /* increase cwnd 5% per RTT */

tcp_friendliness:
	/* TCP Friendly */
	if (tcp_friendliness) {
		__u32 scale = beta_scale;

		delta = (cwnd * scale) >> 3;
		/* while (ack_cnt > delta) { ack_cnt -= delta; tcp_cwnd++; } */
		if (delta && ca->ack_cnt > delta) {
			__u32 n = (ca->ack_cnt - 1) / delta;

			ca->ack_cnt -= n * delta;
			ca->tcp_cwnd += n;
		}

		if (ca->tcp_cwnd > cwnd) { /* if bic is slower than tcp */
			delta = ca->tcp_cwnd - cwnd;
			max_cnt = cwnd / delta;
			if (ca->cnt > max_cnt)
				ca->cnt = max_cnt;
		}
	}

	/* The maximum rate of cwnd increase CUBIC allows is 1 packet per
	 * 2 packets ACKed, meaning cwnd grows at 1.5x per RTT.
	 */
	ca->cnt = max(ca->cnt, 2U);
}

/* cubictcp_cong_avoid() */
SEC("struct_ops")
void BPF_PROG(fp_cubic_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
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
	bictcp_update(ca, tp->snd_cwnd, acked);
	fp_tcp_cong_avoid_ai(tp, ca->cnt, acked);
}

/* cubictcp_recalc_ssthresh() */
SEC("struct_ops")
__u32 BPF_PROG(fp_cubic_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);

	ca->epoch_start = 0; /* end of epoch */

	/* Wmax and fast convergence */
	if (tp->snd_cwnd < ca->last_max_cwnd && fast_convergence)
		ca->last_max_cwnd = (tp->snd_cwnd * (BICTCP_BETA_SCALE + beta)) / (2 * BICTCP_BETA_SCALE);
	else
		ca->last_max_cwnd = tp->snd_cwnd;

	return max((tp->snd_cwnd * beta) / BICTCP_BETA_SCALE, 2U);
}

/* cubictcp_state() */
SEC("struct_ops")
void BPF_PROG(fp_cubic_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Loss) {
		bictcp_reset(inet_csk_ca(sk));
		bictcp_hystart_reset(sk);
	}
}

/* hystart_ack_delay(): account for TSO/GRO delays, at most 1 ms */
static __always_inline __u32 hystart_ack_delay(const struct sock *sk)
{
	unsigned long rate;

	rate = sk->sk_pacing_rate;
	if (!rate)
		return 0;
	return (__u32)min((__u64)USEC_PER_MSEC, (__u64)sk->sk_gso_max_size * 4 * USEC_PER_SEC / rate);
}

/* hystart_update() */
static __always_inline void hystart_update(struct sock *sk, __u32 delay)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);
	__u32 threshold;

	if (after(tp->snd_una, ca->end_seq))
		bictcp_hystart_reset(sk);

	/* hystart triggers when cwnd is larger than some threshold */
	if (tp->snd_cwnd < hystart_low_window)
		return;

	if (hystart_detect & HYSTART_ACK_TRAIN) {
		__u32 now = bictcp_clock_us(sk);

		/* first detection parameter - ack-train detection */
		if ((__s32)(now - ca->last_ack) <= hystart_ack_delta_us) {
			ca->last_ack = now;

			threshold = ca->delay_min + hystart_ack_delay(sk);

			/* Hystart ack train triggers if we get ack past
			 * ca->delay_min/2.
			 * Pacing might have delayed packets up to RTT/2
			 * during slow start.
			 */
			if (sk->sk_pacing_status == SK_PACING_NONE)
				threshold >>= 1;

			if ((__s32)(now - ca->round_start) > threshold) {
				ca->found = 1;
				tp->snd_ssthresh = tp->snd_cwnd;
			}
		}
	}

	if (hystart_detect & HYSTART_DELAY) {
		/* obtain the minimum delay of more than sampling packets */
		if (ca->curr_rtt > delay)
			ca->curr_rtt = delay;
		if (ca->sample_cnt < HYSTART_MIN_SAMPLES) {
			ca->sample_cnt++;
		} else {
			if (ca->curr_rtt > ca->delay_min + HYSTART_DELAY_THRESH(ca->delay_min >> 3)) {
				ca->found = 1;
				tp->snd_ssthresh = tp->snd_cwnd;
			}
		}
	}
}

/* cubictcp_acked() */
SEC("struct_ops")
void BPF_PROG(fp_cubic_acked, struct sock *sk, const struct ack_sample *sample)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct bictcp *ca = inet_csk_ca(sk);
	__u32 delay;

	/* Some calls are for duplicates without timetamps */
	if (sample->rtt_us < 0)
		return;

	/* Discard delay samples right after fast recovery */
	if (ca->epoch_start && (__s32)(tcp_jiffies32 - ca->epoch_start) < HZ)
		return;

	delay = sample->rtt_us;
	if (delay == 0)
		delay = 1;

	/* first time call or link delay decreases */
	if (ca->delay_min == 0 || ca->delay_min > delay)
		ca->delay_min = delay;

	if (!ca->found && tcp_in_slow_start(tp) && hystart)
		hystart_update(sk, delay);
}

SEC("struct_ops")
__u32 BPF_PROG(fp_cubic_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops fp_cubic = {
	.init = (void *)fp_cubic_init,
	.ssthresh = (void *)fp_cubic_recalc_ssthresh,
	.cong_avoid = (void *)fp_cubic_cong_avoid,
	.set_state = (void *)fp_cubic_state,
	.undo_cwnd = (void *)fp_cubic_undo_cwnd,
	.cwnd_event = (void *)fp_cubic_cwnd_event,
	.pkts_acked = (void *)fp_cubic_acked,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "fp_cubic",
};
