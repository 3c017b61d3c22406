// SPDX-License-Identifier: GPL-2.0-only
/* BBR as a BPF program made of the functions tcp_bbr.c exports as kfuncs
 * (tcp_bbr_check_kfunc_ids): it owns cwnd and pacing through cong_control,
 * as the kernel's BBR does. crates/sim/tests/bpf_ccas.rs runs it in
 * lockstep with the simulator's BBR. */
#include "fp_kernel.h"

extern void bbr_init(struct sock *sk) __ksym;
extern void bbr_main(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs) __ksym;
extern __u32 bbr_undo_cwnd(struct sock *sk) __ksym;
extern void bbr_cwnd_event(struct sock *sk, int event) __ksym;
extern __u32 bbr_ssthresh(struct sock *sk) __ksym;
extern void bbr_set_state(struct sock *sk, __u8 new_state) __ksym;

char _license[] SEC("license") = "GPL";

SEC("struct_ops") void BPF_PROG(kbbr_init, struct sock *sk) { bbr_init(sk); }
SEC("struct_ops") void BPF_PROG(kbbr_main, struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs)
{ bbr_main(sk, ack, flag, rs); }
SEC("struct_ops") __u32 BPF_PROG(kbbr_undo, struct sock *sk) { return bbr_undo_cwnd(sk); }
SEC("struct_ops") void BPF_PROG(kbbr_event, struct sock *sk, int ev) { bbr_cwnd_event(sk, ev); }
SEC("struct_ops") __u32 BPF_PROG(kbbr_ssthresh, struct sock *sk) { return bbr_ssthresh(sk); }
SEC("struct_ops") void BPF_PROG(kbbr_state, struct sock *sk, __u8 s) { bbr_set_state(sk, s); }

SEC(".struct_ops.link")
struct tcp_congestion_ops kbbr = {
	.init = (void *)kbbr_init,
	.cong_control = (void *)kbbr_main,
	.undo_cwnd = (void *)kbbr_undo,
	.cwnd_event = (void *)kbbr_event,
	.ssthresh = (void *)kbbr_ssthresh,
	.set_state = (void *)kbbr_state,
	.name = "kbbr",
};
