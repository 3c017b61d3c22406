/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Vegas RTT bookkeeping that the kernel's net/ipv4/tcp_vegas.c exports
 * to YeAH (and Veno) through net/ipv4/tcp_vegas.h: struct vegas,
 * vegas_enable(), vegas_disable(), tcp_vegas_init(), tcp_vegas_pkts_acked(),
 * tcp_vegas_state(), tcp_vegas_cwnd_event(), ported function by function
 * for fatpipe's vegas and yeah BPF ports (a BPF object cannot call another
 * object's functions, so each port compiles these in). Also
 * include/net/tcp.h tcp_in_cwnd_reduction() and tcp_current_ssthresh(),
 * which only Vegas uses. tcp_vegas_get_info() is not ported: a BPF program
 * cannot write the kernel's union tcp_cc_info.
 */
#ifndef FP_TCP_VEGAS_H
#define FP_TCP_VEGAS_H

#include "fp_tcp_cong.h"

/* Vegas variables (net/ipv4/tcp_vegas.h) */
struct vegas {
	__u32 beg_snd_nxt;     /* right edge during last RTT */
	__u32 beg_snd_una;     /* left edge  during last RTT */
	__u32 beg_snd_cwnd;    /* saves the size of the cwnd */
	__u8 doing_vegas_now;  /* if true, do vegas for this RTT */
	__u16 cntRTT;          /* # of RTTs measured within last RTT */
	__u32 minRTT;          /* min of RTTs measured within last RTT (in usec) */
	__u32 baseRTT;         /* the min of all Vegas RTT measurements seen (in usec) */
};

/* vegas_enable(): "re-start" Vegas (connection established, after an RTO,
 * after fast recovery, restart from idle): wait until the completion of an
 * RTT during which ACKs actually arrive. */
static __always_inline void vegas_enable(struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *vegas = inet_csk_ca(sk);

	/* Begin taking Vegas samples next time we send something. */
	vegas->doing_vegas_now = 1;

	/* Set the beginning of the next send window. */
	vegas->beg_snd_nxt = tp->snd_nxt;

	vegas->cntRTT = 0;
	vegas->minRTT = 0x7fffffff;
}

/* vegas_disable(): stop taking Vegas samples for now. */
static __always_inline void vegas_disable(struct sock *sk)
{
	struct vegas *vegas = inet_csk_ca(sk);

	vegas->doing_vegas_now = 0;
}

/* tcp_vegas_init() */
static __always_inline void tcp_vegas_init(struct sock *sk)
{
	struct vegas *vegas = inet_csk_ca(sk);

	vegas->baseRTT = 0x7fffffff;
	vegas_enable(sk);
}

/* tcp_vegas_pkts_acked(): min-filter the RTT samples of the last RTT
 * (queueing included; the min filters out delayed ACKs) and of the whole
 * connection (the propagation delay, baseRTT). */
static __always_inline void tcp_vegas_pkts_acked(struct sock *sk, const struct ack_sample *sample)
{
	struct vegas *vegas = inet_csk_ca(sk);
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;

	/* Never allow zero rtt or baseRTT */
	vrtt = sample->rtt_us + 1;

	/* Filter to find propagation delay: */
	if (vrtt < vegas->baseRTT)
		vegas->baseRTT = vrtt;

	/* Find the min RTT during the last RTT to find
	 * the current prop. delay + queuing delay: */
	vegas->minRTT = min(vegas->minRTT, vrtt);
	vegas->cntRTT++;
}

/* tcp_vegas_state() */
static __always_inline void tcp_vegas_state(struct sock *sk, __u8 ca_state)
{
	if (ca_state == TCP_CA_Open)
		vegas_enable(sk);
	else
		vegas_disable(sk);
}

/* tcp_vegas_cwnd_event(): restarting from idle, start from a clean slate. */
static __always_inline void tcp_vegas_cwnd_event(struct sock *sk, int event)
{
	if (event == CA_EVENT_CWND_RESTART || event == CA_EVENT_TX_START)
		tcp_vegas_init(sk);
}

/* include/net/tcp.h tcp_in_cwnd_reduction() */
static __always_inline int tcp_in_cwnd_reduction(const struct sock *sk)
{
	return ((1 << TCP_CA_CWR) | (1 << TCP_CA_Recovery)) & (1 << icsk_ca_state(sk));
}

/* include/net/tcp.h tcp_current_ssthresh(): in a cwnd reduction the
 * ssthresh, else at least 3/4 of cwnd. */
static __always_inline __u32 tcp_current_ssthresh(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (tcp_in_cwnd_reduction(sk))
		return tp->snd_ssthresh;
	else
		return max(tp->snd_ssthresh, ((tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2)));
}

#endif
