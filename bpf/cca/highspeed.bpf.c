// SPDX-License-Identifier: GPL-2.0-only
/*
 * HighSpeed TCP as a BPF struct_ops congestion control: a port of the
 * kernel's net/ipv4/tcp_highspeed.c (S. Floyd, RFC 3649), function by
 * function, for kernels built without CONFIG_TCP_CONG_HSTCP. It registers as
 * "highspeed"; fatpipe loads it only where the kernel has none of its own.
 *
 * Where it departs from the C file:
 * * hstcp_init() lowers snd_cwnd_clamp to 0xffffffff/128 so that
 *   cwnd * md fits in a u32; a BPF CCA may not write snd_cwnd_clamp
 *   (net/ipv4/bpf_tcp_ca.c), so the port computes hstcp_ssthresh()'s
 *   product in u64 instead and stops the additive increase at the same
 *   bound. The two differ only for a cwnd above 33,554,431 segments.
 * * the two `while` walks over the table in hstcp_cong_avoid() are loops
 *   bounded by the table's length (the verifier must see a bound; the walks
 *   take the same steps), and every index is checked against
 *   HSTCP_AIMD_MAX so the verifier can see it stays in the table;
 * * tcp_slow_start() and tcp_reno_undo_cwnd() are fatpipe's ports
 *   (fp_tcp_cong.h);
 * * registered with TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 */
#include "fp_tcp_cong.h"

/* From AIMD tables from RFC 3649 appendix B,
 * with fixed-point MD scaled <<8. */
struct hstcp_aimd_val {
	unsigned int cwnd;
	unsigned int md;
};

static const struct hstcp_aimd_val hstcp_aimd_vals[] = {
	{     38,  128 }, /* 0.50 */
	{    118,  112 }, /* 0.44 */
	{    221,  104 }, /* 0.41 */
	{    347,   98 }, /* 0.38 */
	{    495,   93 }, /* 0.36 */
	{    663,   89 }, /* 0.35 */
	{    851,   86 }, /* 0.34 */
	{   1058,   83 }, /* 0.32 */
	{   1284,   81 }, /* 0.32 */
	{   1529,   78 }, /* 0.30 */
	{   1793,   76 }, /* 0.30 */
	{   2076,   74 }, /* 0.29 */
	{   2378,   72 }, /* 0.28 */
	{   2699,   71 }, /* 0.28 */
	{   3039,   69 }, /* 0.27 */
	{   3399,   68 }, /* 0.27 */
	{   3778,   66 }, /* 0.26 */
	{   4177,   65 }, /* 0.25 */
	{   4596,   64 }, /* 0.25 */
	{   5036,   62 }, /* 0.24 */
	{   5497,   61 }, /* 0.24 */
	{   5979,   60 }, /* 0.23 */
	{   6483,   59 }, /* 0.23 */
	{   7009,   58 }, /* 0.23 */
	{   7558,   57 }, /* 0.22 */
	{   8130,   56 }, /* 0.22 */
	{   8726,   55 }, /* 0.21 */
	{   9346,   54 }, /* 0.21 */
	{   9991,   53 }, /* 0.21 */
	{  10661,   52 }, /* 0.20 */
	{  11358,   52 }, /* 0.20 */
	{  12082,   51 }, /* 0.20 */
	{  12834,   50 }, /* 0.20 */
	{  13614,   49 }, /* 0.19 */
	{  14424,   48 }, /* 0.19 */
	{  15265,   48 }, /* 0.19 */
	{  16137,   47 }, /* 0.18 */
	{  17042,   46 }, /* 0.18 */
	{  17981,   45 }, /* 0.18 */
	{  18955,   45 }, /* 0.18 */
	{  19965,   44 }, /* 0.17 */
	{  21013,   43 }, /* 0.17 */
	{  22101,   43 }, /* 0.17 */
	{  23230,   42 }, /* 0.16 */
	{  24402,   41 }, /* 0.16 */
	{  25618,   41 }, /* 0.16 */
	{  26881,   40 }, /* 0.16 */
	{  28193,   39 }, /* 0.15 */
	{  29557,   39 }, /* 0.15 */
	{  30975,   38 }, /* 0.15 */
	{  32450,   38 }, /* 0.15 */
	{  33986,   37 }, /* 0.14 */
	{  35586,   36 }, /* 0.14 */
	{  37253,   36 }, /* 0.14 */
	{  38992,   35 }, /* 0.14 */
	{  40808,   35 }, /* 0.14 */
	{  42707,   34 }, /* 0.13 */
	{  44694,   33 }, /* 0.13 */
	{  46776,   33 }, /* 0.13 */
	{  48961,   32 }, /* 0.12 */
	{  51258,   32 }, /* 0.12 */
	{  53677,   31 }, /* 0.12 */
	{  56230,   30 }, /* 0.12 */
	{  58932,   30 }, /* 0.12 */
	{  61799,   29 }, /* 0.11 */
	{  64851,   28 }, /* 0.11 */
	{  68113,   28 }, /* 0.11 */
	{  71617,   27 }, /* 0.11 */
	{  75401,   26 }, /* 0.10 */
	{  79517,   26 }, /* 0.10 */
	{  84035,   25 }, /* 0.10 */
	{  89053,   24 }, /* 0.09 */
};

#define HSTCP_AIMD_MAX (sizeof(hstcp_aimd_vals) / sizeof(hstcp_aimd_vals[0]))
/* hstcp_init()'s clamp: keeps cwnd * md (md <= 128) within a u32. */
#define HSTCP_CWND_MAX (0xffffffffU / 128)

struct hstcp {
	__u32 ai;
};

_Static_assert(sizeof(struct hstcp) <= 104, "struct hstcp must fit icsk_ca_priv");

/* The row ca->ai, kept inside the table where the verifier can see it. */
static __always_inline __u32 hstcp_row(const struct hstcp *ca)
{
	__u32 ai = ca->ai;

	return ai < HSTCP_AIMD_MAX ? ai : HSTCP_AIMD_MAX - 1;
}

/* hstcp_aimd_vals[ai].cwnd for any ai the walks reach; barrier_var() keeps
 * clang from turning the walk into a pointer the verifier cannot bound. */
static __always_inline __u32 hstcp_cwnd_at(__u64 ai)
{
	barrier_var(ai);
	if (ai >= HSTCP_AIMD_MAX)
		return 0xffffffffU;
	return hstcp_aimd_vals[ai].cwnd;
}

/* hstcp_init() */
SEC("struct_ops")
void BPF_PROG(highspeed_init, struct sock *sk)
{
	struct hstcp *ca = inet_csk_ca(sk);

	ca->ai = 0;
	/* The kernel also lowers snd_cwnd_clamp to 0xffffffff/128 here, which
	 * a BPF CCA cannot write: see HSTCP_CWND_MAX and the header. */
}

/* hstcp_cong_avoid() */
SEC("struct_ops")
void BPF_PROG(highspeed_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hstcp *ca = inet_csk_ca(sk);
	__u32 cwnd, ai, i;

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		fp_tcp_slow_start(tp, acked);
		return;
	}

	/* Update AIMD parameters.
	 *
	 * We want to guarantee that:
	 *     hstcp_aimd_vals[ca->ai-1].cwnd <
	 *     snd_cwnd <=
	 *     hstcp_aimd_vals[ca->ai].cwnd
	 */
	cwnd = tp->snd_cwnd;
	ai = hstcp_row(ca);
	if (cwnd > hstcp_cwnd_at(ai)) {
		for (i = 0; i < HSTCP_AIMD_MAX; i++) {
			if (!(cwnd > hstcp_cwnd_at(ai) && ai < HSTCP_AIMD_MAX - 1))
				break;
			ai++;
		}
	} else if (ai && cwnd <= hstcp_cwnd_at(ai - 1)) {
		for (i = 0; i < HSTCP_AIMD_MAX; i++) {
			if (!(ai && cwnd <= hstcp_cwnd_at(ai - 1)))
				break;
			ai--;
		}
	}
	ca->ai = ai;

	/* Do additive increase */
	if (cwnd < tp->snd_cwnd_clamp && cwnd < HSTCP_CWND_MAX) {
		/* cwnd = cwnd + a(w) / cwnd */
		tp->snd_cwnd_cnt += ai + 1;
		if (tp->snd_cwnd_cnt >= cwnd) {
			tp->snd_cwnd_cnt -= cwnd;
			tp->snd_cwnd = cwnd + 1;
		}
	}
}

/* hstcp_ssthresh() */
SEC("struct_ops")
__u32 BPF_PROG(highspeed_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct hstcp *ca = inet_csk_ca(sk);
	__u32 cwnd = tp->snd_cwnd;
	__u64 ai = ca->ai;

	barrier_var(ai);
	if (ai >= HSTCP_AIMD_MAX)
		ai = HSTCP_AIMD_MAX - 1;
	/* Do multiplicative decrease (u64: see the header) */
	return max(cwnd - (__u32)(((__u64)cwnd * hstcp_aimd_vals[ai].md) >> 8), 2U);
}

/* tcp_reno_undo_cwnd(), as the C file's .undo_cwnd */
SEC("struct_ops")
__u32 BPF_PROG(highspeed_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops highspeed = {
	.init = (void *)highspeed_init,
	.ssthresh = (void *)highspeed_ssthresh,
	.undo_cwnd = (void *)highspeed_undo_cwnd,
	.cong_avoid = (void *)highspeed_cong_avoid,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "highspeed",
};
