// SPDX-License-Identifier: GPL-2.0-only
/*
 * TCP Westwood+ as a BPF struct_ops congestion control: a port of the
 * kernel's net/ipv4/tcp_westwood.c (Mascolo, Casetti, Gerla et al., "TCP
 * Westwood: bandwidth estimation for TCP", MobiCom 2001; Grieco, Mascolo,
 * CCR 2004), function by function, for kernels built without
 * CONFIG_TCP_CONG_WESTWOOD. It registers as "westwood"; fatpipe loads it only
 * where the kernel has none of its own.
 *
 * Where it departs from the C file:
 * * tcp_westwood_info() (get_info) is not ported: a BPF program cannot
 *   write the kernel's union tcp_cc_info, so TCP_CC_INFO returns nothing;
 * * tcp_jiffies32 comes from bpf_jiffies64(), HZ from the kernel's Kconfig
 *   (fp_kernel.h); TCP_WESTWOOD_RTT_MIN divides the unsigned Kconfig value;
 * * tcp_reno_ssthresh(), tcp_reno_cong_avoid() and tcp_reno_undo_cwnd()
 *   are fatpipe's ports (fp_tcp_cong.h), validated by fp_reno;
 * * registered with TCP_CONG_NON_RESTRICTED (docs/bpf-ccas.md).
 * All arithmetic is u32 as in the C file.
 */
#include "fp_tcp_cong.h"

/* include/net/tcp.h enum tcp_ca_ack_event_flags */
#define CA_ACK_SLOWPATH (1 << 0) /* In slow path processing */

/* TCP Westwood structure */
struct westwood {
	__u32 bw_ns_est;  /* first bandwidth estimation..not too smoothed 8) */
	__u32 bw_est;     /* bandwidth estimate */
	__u32 rtt_win_sx; /* here starts a new evaluation... */
	__u32 bk;
	__u32 snd_una; /* used for evaluating the number of acked bytes */
	__u32 cumul_ack;
	__u32 accounted;
	__u32 rtt;
	__u32 rtt_min;       /* minimum observed RTT */
	__u8 first_ack;      /* flag which infers that this is the first ack */
	__u8 reset_rtt_min;  /* Reset RTT min to next RTT sample*/
};

_Static_assert(sizeof(struct westwood) <= 104, "struct westwood must fit icsk_ca_priv");

/* TCP Westwood functions and constants */
#define TCP_WESTWOOD_RTT_MIN ((__u32)(CONFIG_HZ / 20)) /* 50ms */
#define TCP_WESTWOOD_INIT_RTT ((__u32)(20 * CONFIG_HZ)) /* maybe too conservative?! */

/* tcp_westwood_init(): called after the initial SYN; no RTT is known yet,
 * so rtt_min starts at the conservative TCP_WESTWOOD_INIT_RTT. */
SEC("struct_ops")
void BPF_PROG(westwood_init, struct sock *sk)
{
	struct westwood *w = inet_csk_ca(sk);

	w->bk = 0;
	w->bw_ns_est = 0;
	w->bw_est = 0;
	w->accounted = 0;
	w->cumul_ack = 0;
	w->reset_rtt_min = 1;
	w->rtt_min = w->rtt = TCP_WESTWOOD_INIT_RTT;
	w->rtt_win_sx = tcp_jiffies32;
	w->snd_una = tcp_sk(sk)->snd_una;
	w->first_ack = 1;
}

/* westwood_do_filter(): low-pass filter with constant coefficients. */
static __always_inline __u32 westwood_do_filter(__u32 a, __u32 b)
{
	return ((7 * a) + b) >> 3;
}

/* westwood_filter() */
static __always_inline void westwood_filter(struct westwood *w, __u32 delta)
{
	/* If the filter is empty fill it with the first sample of bandwidth  */
	if (w->bw_ns_est == 0 && w->bw_est == 0) {
		w->bw_ns_est = w->bk / delta;
		w->bw_est = w->bw_ns_est;
	} else {
		w->bw_ns_est = westwood_do_filter(w->bw_ns_est, w->bk / delta);
		w->bw_est = westwood_do_filter(w->bw_est, w->bw_ns_est);
	}
}

/* tcp_westwood_pkts_acked(): all westwood needs is the last RTT sample. */
SEC("struct_ops")
void BPF_PROG(westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct westwood *w = inet_csk_ca(sk);

	if (sample->rtt_us > 0)
		w->rtt = usecs_to_jiffies(sample->rtt_us);
}

/* westwood_update_window(): when an RTT window (at least 50 ms) has passed,
 * filter the bandwidth sample. */
static __always_inline void westwood_update_window(struct sock *sk)
{
	struct westwood *w = inet_csk_ca(sk);
	__s32 delta = tcp_jiffies32 - w->rtt_win_sx;

	/* Initialize w->snd_una with the first acked sequence number in order
	 * to fix mismatch between tp->snd_una and w->snd_una for the first
	 * bandwidth sample */
	if (w->first_ack) {
		w->snd_una = tcp_sk(sk)->snd_una;
		w->first_ack = 0;
	}

	/* The C file compares max_t(u32, ...) with the s32 delta: unsigned. */
	if (w->rtt && (__u32)delta > max(w->rtt, TCP_WESTWOOD_RTT_MIN)) {
		westwood_filter(w, delta);

		w->bk = 0;
		w->rtt_win_sx = tcp_jiffies32;
	}
}

/* update_rtt_min() */
static __always_inline void update_rtt_min(struct westwood *w)
{
	if (w->reset_rtt_min) {
		w->rtt_min = w->rtt;
		w->reset_rtt_min = 0;
	} else
		w->rtt_min = min(w->rtt, w->rtt_min);
}

/* westwood_fast_bw(): the fast path (header prediction succeeded). */
static __always_inline void westwood_fast_bw(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = inet_csk_ca(sk);

	westwood_update_window(sk);

	w->bk += tp->snd_una - w->snd_una;
	w->snd_una = tp->snd_una;
	update_rtt_min(w);
}

/* westwood_acked_count(): cumul_ack for bk with delayed or partial acks. */
static __always_inline __u32 westwood_acked_count(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = inet_csk_ca(sk);

	w->cumul_ack = tp->snd_una - w->snd_una;

	/* If cumul_ack is 0 this is a dupack since it's not moving
	 * tp->snd_una. */
	if (!w->cumul_ack) {
		w->accounted += tp->mss_cache;
		w->cumul_ack = tp->mss_cache;
	}

	if (w->cumul_ack > tp->mss_cache) {
		/* Partial or delayed ack */
		if (w->accounted >= w->cumul_ack) {
			w->accounted -= w->cumul_ack;
			w->cumul_ack = tp->mss_cache;
		} else {
			w->cumul_ack -= w->accounted;
			w->accounted = 0;
		}
	}

	w->snd_una = tp->snd_una;

	return w->cumul_ack;
}

/* tcp_westwood_bw_rttmin(): bandwidth estimate * rtt_min in packets;
 * rtt_min is at least 2, so never 0. */
static __always_inline __u32 tcp_westwood_bw_rttmin(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct westwood *w = inet_csk_ca(sk);

	return max((w->bw_est * w->rtt_min) / tp->mss_cache, 2U);
}

/* tcp_westwood_ack() */
SEC("struct_ops")
void BPF_PROG(westwood_ack, struct sock *sk, __u32 ack_flags)
{
	if (ack_flags & CA_ACK_SLOWPATH) {
		struct westwood *w = inet_csk_ca(sk);

		westwood_update_window(sk);
		w->bk += westwood_acked_count(sk);

		update_rtt_min(w);
		return;
	}

	westwood_fast_bw(sk);
}

/* tcp_westwood_event() */
SEC("struct_ops")
void BPF_PROG(westwood_event, struct sock *sk, int event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = inet_csk_ca(sk);

	switch (event) {
	case CA_EVENT_COMPLETE_CWR:
		tp->snd_ssthresh = tcp_westwood_bw_rttmin(sk);
		tp->snd_cwnd = tp->snd_ssthresh;
		break;
	case CA_EVENT_LOSS:
		tp->snd_ssthresh = tcp_westwood_bw_rttmin(sk);
		/* Update RTT_min when next ack arrives */
		w->reset_rtt_min = 1;
		break;
	default:
		/* don't care */
		break;
	}
}

/* tcp_reno_ssthresh(), tcp_reno_cong_avoid(), tcp_reno_undo_cwnd(): the C
 * file's .ssthresh, .cong_avoid and .undo_cwnd */
SEC("struct_ops")
__u32 BPF_PROG(westwood_ssthresh, struct sock *sk)
{
	return fp_tcp_reno_ssthresh(sk);
}

SEC("struct_ops")
void BPF_PROG(westwood_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	fp_tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(westwood_undo_cwnd, struct sock *sk)
{
	return fp_tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops westwood = {
	.init = (void *)westwood_init,
	.ssthresh = (void *)westwood_ssthresh,
	.cong_avoid = (void *)westwood_cong_avoid,
	.undo_cwnd = (void *)westwood_undo_cwnd,
	.cwnd_event = (void *)westwood_event,
	.in_ack_event = (void *)westwood_ack,
	.pkts_acked = (void *)westwood_pkts_acked,
	.flags = TCP_CONG_NON_RESTRICTED,
	.name = "westwood",
};
