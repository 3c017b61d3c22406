/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The parts of the kernel's types and inline helpers that fatpipe's BPF
 * congestion controls use, declared with preserve_access_index so libbpf
 * relocates every field access against the running kernel's BTF (CO-RE):
 * the objects build without the kernel's headers or a vmlinux.h and load on
 * any kernel with BTF whose fields keep these names.
 *
 * Kernel sources followed: include/linux/tcp.h (struct tcp_sock),
 * include/net/inet_connection_sock.h, include/net/sock.h, include/net/tcp.h
 * (tcp_in_slow_start, tcp_is_cwnd_limited, before/after, the TCP_CONG_ and
 * ecn flags), include/linux/jiffies.h.
 *
 * What a BPF CCA may not do (net/ipv4/bpf_tcp_ca.c,
 * bpf_tcp_ca_btf_struct_access): write anything but snd_cwnd,
 * snd_cwnd_cnt, snd_cwnd_stamp, snd_ssthresh, ecn_flags, app_limited,
 * icsk_ca_priv (104 bytes), icsk_ack.pending, sk_pacing_rate and
 * sk_pacing_status; call kernel functions other than the helpers and
 * kfuncs listed there; use floating point; and (clang 14) divide signed
 * 64-bit numbers.
 */
#ifndef FP_KERNEL_H
#define FP_KERNEL_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define PAI __attribute__((preserve_access_index))

struct sock_common {
	unsigned char skc_state;
} PAI;

struct sock {
	struct sock_common __sk_common;
	unsigned long sk_pacing_rate;
	__u32 sk_pacing_status;
	unsigned int sk_gso_max_size;
} PAI;

struct inet_sock {
	struct sock sk;
} PAI;

struct inet_connection_sock {
	struct inet_sock icsk_inet;
	__u8 icsk_ca_state:5, icsk_ca_initialized:1, icsk_ca_setsockopt:1, icsk_ca_dst_locked:1;
	struct {
		__u8 pending;
	} icsk_ack;
	__u64 icsk_ca_priv[104 / sizeof(__u64)];
} PAI;

struct tcp_sock {
	struct inet_connection_sock inet_conn;
	__u32 rcv_nxt;
	__u32 snd_nxt;
	__u32 snd_una;
	__u32 mss_cache;
	__u32 snd_cwnd;
	__u32 snd_cwnd_cnt;
	__u32 snd_cwnd_clamp;
	__u32 snd_cwnd_stamp;
	__u32 prior_cwnd;
	__u32 snd_ssthresh;
	__u32 lsndtime;
	__u32 max_packets_out;
	__u32 delivered;
	__u32 delivered_ce;
	__u32 srtt_us;
	__u64 tcp_mstamp;
	__u8 ecn_flags;
	__u8 is_cwnd_limited:1;
} PAI;

struct ack_sample {
	__u32 pkts_acked;
	__s32 rtt_us;
	__u32 in_flight;
} PAI;

struct rate_sample {
	__u64 prior_mstamp;
} PAI;

/* The struct the kernel's bpf_struct_ops maps onto (include/net/tcp.h);
 * libbpf matches the members by name. */
struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, int ev);
	void (*in_ack_event)(struct sock *sk, __u32 flags);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	__u32 (*undo_cwnd)(struct sock *sk);
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	char name[16];
	__u32 flags;
};

/* include/net/tcp.h */
#define TCP_CONG_NON_RESTRICTED 0x1
#define TCP_CONG_NEEDS_ECN 0x2

/* enum tcp_ca_state */
#define TCP_CA_Open 0
#define TCP_CA_Disorder 1
#define TCP_CA_CWR 2
#define TCP_CA_Recovery 3
#define TCP_CA_Loss 4
#define TCPF_CA_Open (1 << TCP_CA_Open)
#define TCPF_CA_Disorder (1 << TCP_CA_Disorder)

/* enum tcp_ca_event */
#define CA_EVENT_TX_START 0
#define CA_EVENT_CWND_RESTART 1
#define CA_EVENT_COMPLETE_CWR 2
#define CA_EVENT_LOSS 3
#define CA_EVENT_ECN_NO_CE 4
#define CA_EVENT_ECN_IS_CE 5

/* tcp_sock.ecn_flags (include/net/tcp_ecn.h): bit 0 is RFC 3168 ECN
 * (TCP_ECN_OK before Linux 6.18 named it so), bit 4 AccECN. */
#define TCP_ECN_MODE_RFC3168 0x1
#define TCP_ECN_DEMAND_CWR 0x4
#define TCP_ECN_MODE_ACCECN 0x10
#define TCP_ECN_MODE_ANY (TCP_ECN_MODE_RFC3168 | TCP_ECN_MODE_ACCECN)

/* enum inet_csk_ack_state_t */
#define ICSK_ACK_TIMER 2
#define ICSK_ACK_NOW 16

/* enum sk_pacing */
#define SK_PACING_NONE 0

/* TCP states (include/net/tcp_states.h) */
#define TCP_CLOSE 7
#define TCP_LISTEN 10

#define SOL_TCP 6
#define TCP_CONGESTION 13

#define USEC_PER_SEC 1000000ULL
#define USEC_PER_MSEC 1000ULL
#define MSEC_PER_SEC 1000ULL

/* The kernel's tick rate, from its Kconfig (libbpf reads /proc/config.gz
 * or /boot/config-$(uname -r) at load time). */
extern const unsigned int CONFIG_HZ __kconfig;
/* An int, as the kernel's HZ: comparisons and arithmetic keep the
 * kernel's signedness. Divide CONFIG_HZ itself (unsigned) where the kernel
 * divides HZ by a constant: BPF (clang 14) has no signed division. */
#define HZ ((int)CONFIG_HZ)

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline __u8 icsk_ca_state(const struct sock *sk)
{
	const struct inet_connection_sock *icsk = inet_csk(sk);

	return (__u8)BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
}

/* include/net/tcp.h: before(), after() */
static __always_inline int before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}
#define after(seq2, seq1) before(seq1, seq2)

/* include/net/tcp.h: between() */
static __always_inline int between(__u32 seq1, __u32 seq2, __u32 seq3)
{
	return seq3 - seq2 >= seq1 - seq2;
}

/* tcp_jiffies32 is (u32)jiffies; the helper bpf_jiffies64() reads it. */
#define tcp_jiffies32 ((__u32)bpf_jiffies64())
#define jiffies ((__u32)bpf_jiffies64())

/* include/linux/jiffies.h: msecs_to_jiffies()/usecs_to_jiffies() round up;
 * for an HZ that divides 1000 (100, 250, 1000) their
 * DIV_ROUND_UP(m, MSEC_PER_SEC / HZ) equals this (unsigned 64-bit) form. */
static __always_inline __u32 msecs_to_jiffies(__u32 m)
{
	return (__u32)(((__u64)m * HZ + MSEC_PER_SEC - 1) / MSEC_PER_SEC);
}

static __always_inline __u32 usecs_to_jiffies(__u32 u)
{
	return (__u32)(((__u64)u * HZ + USEC_PER_SEC - 1) / USEC_PER_SEC);
}

/* include/asm-generic/bitops/fls64.h: fls64(), by halving (BPF has no
 * count-leading-zeros instruction). */
static __always_inline __u32 fls64(__u64 x)
{
	__u32 n = 0;

	if (!x)
		return 0;
	if (x >> 32) { n += 32; x >>= 32; }
	if (x >> 16) { n += 16; x >>= 16; }
	if (x >> 8) { n += 8; x >>= 8; }
	if (x >> 4) { n += 4; x >>= 4; }
	if (x >> 2) { n += 2; x >>= 2; }
	if (x >> 1) { n += 1; x >>= 1; }
	return n + 1;
}

#endif
