// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP-NV as a BPF struct_ops congestion control: a port of the kernel's
 * net/ipv4/tcp_nv.c (L. Brakmo, "TCP-NV: An Update to TCP-Vegas", 2010),
 * function by function, for kernels built without CONFIG_TCP_CONG_NV. It
 * registers as "nv"; fatpipe loads it only where the kernel has none of its
 * own.
 *
 * Where it departs from the C file:
 * * tcpnv_init() asks a sock_ops BPF program for a base RTT
 *   (tcp_call_bpf(BPF_SOCK_OPS_BASE_RTT)); a struct_ops program cannot make
 *   that call, so the port takes the kernel's answer when no such program
 *   is attached: no base RTT (nv_base_rtt = nv_lower_bound_rtt = 0);
 * * get_random_bytes() is bpf_get_prandom_u32() (its low byte);
 * * jiffies (an unsigned long) comes from bpf_jiffies64(), HZ from the
 *   kernel's Kconfig (fp_kernel.h); time_after_eq() is written out;
 * * do_div() and div64_u64() are plain unsigned 64-bit divisions (BPF has
 *   them); ca->nv_min_cwnd / 2 divides the unsigned u8 (the kernel's int
 *   promotion of a u8 is never negative; BPF has no signed division);
 * * tcpnv_get_info() is not ported (TCP_CC_INFO returns nothing);
 * * module parameters are read-only globals with the module's defaults;
 * * tcp_slow_start(), tcp_cong_avoid_ai() and tcp_reno_undo_cwnd() are
 *   fatpipe's ports (fp_tcp_cong.h);
 * * registered with TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 */
#include "fp_tcp_cong.h"

/* TCP NV parameters (the C file's header comment explains each) */
const volatile int nv_pad = 10;
const volatile int nv_pad_buffer = 2;
const volatile int nv_reset_period = 5; /* in seconds */
const volatile int nv_min_cwnd = 2;
const volatile int nv_cong_dec_mult = 30 * 128 / 100; /* = 30% */
const volatile int nv_ssthresh_factor = 8;            /* = 1 */
const volatile int nv_rtt_factor = 128;               /* = 1/2*old + 1/2*new */
const volatile int nv_loss_dec_factor = 819;          /* => 80% */
const volatile int nv_cwnd_growth_rate_neg = 8;
const volatile int nv_cwnd_growth_rate_pos = 0; /* 0 => fixed like Reno */
const volatile int nv_dec_eval_min_calls = 60;
const volatile int nv_inc_eval_min_calls = 20;
const volatile int nv_ssthresh_eval_min_calls = 30;
const volatile int nv_stop_rtt_cnt = 10;
const volatile int nv_rtt_min_cnt = 2;

/* TCP NV Parameters */
struct tcpnv {
	__u64 nv_min_rtt_reset_jiffies; /* when to switch to nv_min_rtt_new (unsigned long) */
	__s8 cwnd_growth_factor;        /* Current cwnd growth factor, < 0 => less than 1 packet/RTT */
	__u8 available8;
	__u16 available16;
	__u8 nv_allow_cwnd_growth:1, /* whether cwnd can grow */
		nv_reset:1,          /* whether to reset values */
		nv_catchup:1;        /* whether we are growing because of temporary cwnd decrease */
	__u8 nv_eval_call_cnt;       /* call count since last eval */
	__u8 nv_min_cwnd;            /* nv won't make a ca decision if cwnd is smaller than this
				      * (not the file local nv_min_cwnd) */
	__u8 nv_rtt_cnt;             /* RTTs without making ca decision */
	__u32 nv_last_rtt;           /* last rtt */
	__u32 nv_min_rtt;            /* active min rtt. Used to determine slope */
	__u32 nv_min_rtt_new;        /* min rtt for future use */
	__u32 nv_base_rtt;           /* If non-zero it represents the threshold for congestion */
	__u32 nv_lower_bound_rtt;    /* Used in conjunction with nv_base_rtt: 80% of it */
	__u32 nv_rtt_max_rate;       /* max rate seen during current RTT */
	__u32 nv_rtt_start_seq;      /* current RTT ends when packet arrives acking beyond it */
	__u32 nv_last_snd_una;       /* Previous value of tp->snd_una */
	__u32 nv_no_cong_cnt;        /* Consecutive no congestion decisions */
};

_Static_assert(sizeof(struct tcpnv) <= 104, "struct tcpnv must fit icsk_ca_priv");

#define NV_INIT_RTT 0xffffffffU /* U32_MAX */
#define NV_MIN_CWND 4
#define NV_MIN_CWND_GROW 2
#define NV_TSO_CWND_BOUND 80
#define TCP_INFINITE_SSTHRESH 0x7fffffff

/* tcpnv_reset() */
static __always_inline void tcpnv_reset(struct tcpnv *ca, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	ca->nv_reset = 0;
	ca->nv_no_cong_cnt = 0;
	ca->nv_rtt_cnt = 0;
	ca->nv_last_rtt = 0;
	ca->nv_rtt_max_rate = 0;
	ca->nv_rtt_start_seq = tp->snd_una;
	ca->nv_eval_call_cnt = 0;
	ca->nv_last_snd_una = tp->snd_una;
}

/* tcpnv_init() */
SEC("struct_ops")
void BPF_PROG(nv_init, struct sock *sk)
{
	struct tcpnv *ca = inet_csk_ca(sk);

	tcpnv_reset(ca, sk);

	/* The kernel asks a sock_ops BPF program for a base RTT here
	 * (BPF_SOCK_OPS_BASE_RTT); without one the answer is none. */
	ca->nv_base_rtt = 0;
	ca->nv_lower_bound_rtt = 0;

	ca->nv_allow_cwnd_growth = 1;
	ca->nv_min_rtt_reset_jiffies = bpf_jiffies64() + 2 * HZ;
	ca->nv_min_rtt = NV_INIT_RTT;
	ca->nv_min_rtt_new = NV_INIT_RTT;
	ca->nv_min_cwnd = NV_MIN_CWND;
	ca->nv_catchup = 0;
	ca->cwnd_growth_factor = 0;
}

/* nv_get_bounded_rtt(): apply the upper (base_rtt) and lower
 * (lower_bound_rtt) bounds to an RTT, if provided. */
static __always_inline __u32 nv_get_bounded_rtt(struct tcpnv *ca, __u32 val)
{
	if (ca->nv_lower_bound_rtt > 0 && val < ca->nv_lower_bound_rtt)
		return ca->nv_lower_bound_rtt;
	else if (ca->nv_base_rtt > 0 && val > ca->nv_base_rtt)
		return ca->nv_base_rtt;
	else
		return val;
}

/* tcpnv_cong_avoid() */
SEC("struct_ops")
void BPF_PROG(nv_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tcpnv *ca = inet_csk_ca(sk);
	__u32 cnt;

	if (!tcp_is_cwnd_limited(sk))
		return;

	/* Only grow cwnd if NV has not detected congestion */
	if (!ca->nv_allow_cwnd_growth)
		return;

	if (tcp_in_slow_start(tp)) {
		acked = fp_tcp_slow_start(tp, acked);
		if (!acked)
			return;
	}

	if (ca->cwnd_growth_factor < 0) {
		cnt = tp->snd_cwnd << -ca->cwnd_growth_factor;
		fp_tcp_cong_avoid_ai(tp, cnt, acked);
	} else {
		cnt = max(4U, tp->snd_cwnd >> ca->cwnd_growth_factor);
		fp_tcp_cong_avoid_ai(tp, cnt, acked);
	}
}

/* tcpnv_recalc_ssthresh() */
SEC("struct_ops")
__u32 BPF_PROG(nv_recalc_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return max((tp->snd_cwnd * nv_loss_dec_factor) >> 10, 2U);
}

/* tcpnv_state() */
SEC("struct_ops")
void BPF_PROG(nv_state, struct sock *sk, __u8 new_state)
{
	struct tcpnv *ca = inet_csk_ca(sk);

	if (new_state == TCP_CA_Open && ca->nv_reset) {
		tcpnv_reset(ca, sk);
	} else if (new_state == TCP_CA_Loss || new_state == TCP_CA_CWR ||
		   new_state == TCP_CA_Recovery) {
		ca->nv_reset = 1;
		ca->nv_allow_cwnd_growth = 0;
		if (new_state == TCP_CA_Loss) {
			/* Reset cwnd growth factor to Reno value */
			if (ca->cwnd_growth_factor > 0)
				ca->cwnd_growth_factor = 0;
			/* Decrease growth rate if allowed */
			if (nv_cwnd_growth_rate_neg > 0 && ca->cwnd_growth_factor > -8)
				ca->cwnd_growth_factor--;
		}
	}
}

/* tcpnv_acked(): do congestion avoidance calculations for TCP-NV */
SEC("struct_ops")
void BPF_PROG(nv_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tcpnv *ca = inet_csk_ca(sk);
	__u64 now = bpf_jiffies64();
	__u64 rate64;
	__u32 rate, max_win, cwnd_by_slope;
	__u32 avg_rtt;
	__u32 bytes_acked = 0;
	__u8 state = icsk_ca_state(sk);

	/* Some calls are for duplicates without timetamps */
	if (sample->rtt_us < 0)
		return;

	/* If not in TCP_CA_Open or TCP_CA_Disorder states, skip. */
	if (state != TCP_CA_Open && state != TCP_CA_Disorder)
		return;

	/* Stop cwnd growth if we were in catch up mode */
	if (ca->nv_catchup && tp->snd_cwnd >= nv_min_cwnd) {
		ca->nv_catchup = 0;
		ca->nv_allow_cwnd_growth = 0;
	}

	bytes_acked = tp->snd_una - ca->nv_last_snd_una;
	ca->nv_last_snd_una = tp->snd_una;

	if (sample->in_flight == 0)
		return;

	/* Calculate moving average of RTT */
	if (nv_rtt_factor > 0) {
		if (ca->nv_last_rtt > 0) {
			avg_rtt = (((__u64)sample->rtt_us) * nv_rtt_factor +
				   ((__u64)ca->nv_last_rtt) * (256 - nv_rtt_factor)) >> 8;
		} else {
			avg_rtt = sample->rtt_us;
			ca->nv_min_rtt = avg_rtt << 1;
		}
		ca->nv_last_rtt = avg_rtt;
	} else {
		avg_rtt = sample->rtt_us;
	}

	/* rate in 100's bits per second */
	rate64 = ((__u64)sample->in_flight) * 80000;
	rate64 /= avg_rtt ?: 1; /* do_div() */
	rate = (__u32)rate64;

	/* Remember the maximum rate seen during this RTT
	 * Note: It may be more than one RTT. This function should be
	 *       called at least nv_dec_eval_min_calls times. */
	if (ca->nv_rtt_max_rate < rate)
		ca->nv_rtt_max_rate = rate;

	/* We have valid information, increment counter */
	if (ca->nv_eval_call_cnt < 255)
		ca->nv_eval_call_cnt++;

	/* Apply bounds to rtt. Only used to update min_rtt */
	avg_rtt = nv_get_bounded_rtt(ca, avg_rtt);

	/* update min rtt if necessary */
	if (avg_rtt < ca->nv_min_rtt)
		ca->nv_min_rtt = avg_rtt;

	/* update future min_rtt if necessary */
	if (avg_rtt < ca->nv_min_rtt_new)
		ca->nv_min_rtt_new = avg_rtt;

	/* nv_min_rtt is the minimum (possibly averaged) rtt of the last
	 * nv_reset_period seconds, the period drawn from
	 * [nv_reset_period*3/4, nv_reset_period*5/4). time_after_eq(): */
	if ((__s64)(now - ca->nv_min_rtt_reset_jiffies) >= 0) {
		unsigned char rand = bpf_get_prandom_u32() & 0xff; /* get_random_bytes(&rand, 1) */

		ca->nv_min_rtt = ca->nv_min_rtt_new;
		ca->nv_min_rtt_new = NV_INIT_RTT;
		ca->nv_min_rtt_reset_jiffies = now + ((nv_reset_period * (384 + rand) * HZ) >> 9);
		/* Every so often we decrease ca->nv_min_cwnd in case previous
		 *  value is no longer accurate. */
		ca->nv_min_cwnd = max((__u32)ca->nv_min_cwnd / 2, (__u32)NV_MIN_CWND);
	}

	/* Once per RTT check if we need to do congestion avoidance */
	if (before(ca->nv_rtt_start_seq, tp->snd_una)) {
		ca->nv_rtt_start_seq = tp->snd_nxt;
		if (ca->nv_rtt_cnt < 0xff)
			/* Increase counter for RTTs without CA decision */
			ca->nv_rtt_cnt++;

		/* If this function is only called once within an RTT
		 * the cwnd is probably too small (in some cases due to
		 * tso, lro or interrupt coalescence), so we increase
		 * ca->nv_min_cwnd. */
		if (ca->nv_eval_call_cnt == 1 &&
		    bytes_acked >= (ca->nv_min_cwnd - 1) * tp->mss_cache &&
		    ca->nv_min_cwnd < (NV_TSO_CWND_BOUND + 1)) {
			ca->nv_min_cwnd = min(ca->nv_min_cwnd + NV_MIN_CWND_GROW, NV_TSO_CWND_BOUND + 1);
			ca->nv_rtt_start_seq = tp->snd_nxt + ca->nv_min_cwnd * tp->mss_cache;
			ca->nv_eval_call_cnt = 0;
			ca->nv_allow_cwnd_growth = 1;
			return;
		}

		/* Find the ideal cwnd for current rate from slope
		 * slope = 80000.0 * mss / nv_min_rtt
		 * cwnd_by_slope = nv_rtt_max_rate / slope */
		cwnd_by_slope = (__u32)((((__u64)ca->nv_rtt_max_rate) * ca->nv_min_rtt) /
					(80000ULL * tp->mss_cache)); /* div64_u64() */
		max_win = cwnd_by_slope + nv_pad;

		/* If cwnd > max_win, decrease cwnd
		 * if cwnd < max_win, grow cwnd
		 * else leave the same */
		if (tp->snd_cwnd > max_win) {
			/* there is congestion, check that it is ok
			 * to make a CA decision
			 * 1. We should have at least nv_dec_eval_min_calls
			 *    data points before making a CA  decision
			 * 2. We only make a congesion decision after
			 *    nv_rtt_min_cnt RTTs */
			if (ca->nv_rtt_cnt < nv_rtt_min_cnt) {
				return;
			} else if (tp->snd_ssthresh == TCP_INFINITE_SSTHRESH) {
				if (ca->nv_eval_call_cnt < nv_ssthresh_eval_min_calls)
					return;
				/* otherwise we will decrease cwnd */
			} else if (ca->nv_eval_call_cnt < nv_dec_eval_min_calls) {
				if (ca->nv_allow_cwnd_growth && ca->nv_rtt_cnt > nv_stop_rtt_cnt)
					ca->nv_allow_cwnd_growth = 0;
				return;
			}

			/* We have enough data to determine we are congested */
			ca->nv_allow_cwnd_growth = 0;
			tp->snd_ssthresh = (nv_ssthresh_factor * max_win) >> 3;
			if (tp->snd_cwnd - max_win > 2) {
				/* gap > 2, we do exponential cwnd decrease */
				int dec;

				dec = max(2U, ((tp->snd_cwnd - max_win) * nv_cong_dec_mult) >> 7);
				tp->snd_cwnd = tp->snd_cwnd - dec;
			} else if (nv_cong_dec_mult > 0) {
				tp->snd_cwnd = max_win;
			}
			if (ca->cwnd_growth_factor > 0)
				ca->cwnd_growth_factor = 0;
			ca->nv_no_cong_cnt = 0;
		} else if (tp->snd_cwnd <= max_win - nv_pad_buffer) {
			/* There is no congestion, grow cwnd if allowed*/
			if (ca->nv_eval_call_cnt < nv_inc_eval_min_calls)
				return;

			ca->nv_allow_cwnd_growth = 1;
			ca->nv_no_cong_cnt++;
			if (ca->cwnd_growth_factor < 0 && nv_cwnd_growth_rate_neg > 0 &&
			    ca->nv_no_cong_cnt > nv_cwnd_growth_rate_neg) {
				ca->cwnd_growth_factor++;
				ca->nv_no_cong_cnt = 0;
			} else if (ca->cwnd_growth_factor >= 0 && nv_cwnd_growth_rate_pos > 0 &&
				   ca->nv_no_cong_cnt > nv_cwnd_growth_rate_pos) {
				ca->cwnd_growth_factor++;
				ca->nv_no_cong_cnt = 0;
			}
		} else {
			/* cwnd is in-between, so do nothing */
			return;
		}

		/* update state */
		ca->nv_eval_call_cnt = 0;
		ca->nv_rtt_cnt = 0;
		ca->nv_rtt_max_rate = 0;

		/* Don't want to make cwnd < nv_min_cwnd
		 * (it wasn't before, if it is now is because nv
		 *  decreased it). */
		if (tp->snd_cwnd < nv_min_cwnd)
			tp->snd_cwnd = nv_min_cwnd;
	}
}

/* tcp_reno_undo_cwnd(), as the C file's .undo_cwnd */
SEC("struct_ops")
__u32 BPF_PROG(nv_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops nv = {
	.init = (void *)nv_init,
	.ssthresh = (void *)nv_recalc_ssthresh,
	.cong_avoid = (void *)nv_cong_avoid,
	.set_state = (void *)nv_state,
	.undo_cwnd = (void *)nv_undo_cwnd,
	.pkts_acked = (void *)nv_acked,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "nv",
};
