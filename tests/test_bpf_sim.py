"""BPF congestion controls on the sim backend (docs/bpf-ccas.md): a study
names fatpipe's port (bpf:htcp) or a user's source (bpf:FILE.bpf.c); the
simulator runs the object's own programs; bad objects are refused with
the reason. Needs clang and the loader fatpipe-ccaload (built on use)."""

import shutil

import pytest

from fatpipe import bpfcc
from fatpipe.backends.base import BackendUnavailable
from fatpipe.backends.sim import SimBackend
from spec_text import plans_for

pytestmark = pytest.mark.skipif(shutil.which("clang") is None, reason="no clang to build BPF objects")

STUDY = """
version = 1
[study]
name = "bpf"
backends = ["sim"]
duration = "4s"
[path]
rate = "100Mbit"
rtt = "40ms"
buffer = "1bdp"
[[flows]]
cc = "{cc}"
streams = 2
"""

# A user's CCA: Reno's increase through the kernel's kfunc, a 0.7
# multiplicative decrease of its own, and a private counter of losses.
USER_CCA = r"""
#include "fp_kernel.h"
char _license[] SEC("license") = "GPL";
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

struct mine { __u32 losses; };

SEC("struct_ops")
__u32 BPF_PROG(mine_ssthresh, struct sock *sk)
{
	struct mine *ca = inet_csk_ca(sk);
	__u32 w = tcp_sk(sk)->snd_cwnd * 7 / 10;

	ca->losses++;
	return w > 2 ? w : 2;
}

SEC("struct_ops")
void BPF_PROG(mine_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC("struct_ops")
__u32 BPF_PROG(mine_undo, struct sock *sk)
{
	return tcp_reno_undo_cwnd(sk);
}

SEC(".struct_ops.link")
struct tcp_congestion_ops mine = {
	.ssthresh = (void *)mine_ssthresh,
	.cong_avoid = (void *)mine_cong_avoid,
	.undo_cwnd = (void *)mine_undo,
	.name = "mine",
};
"""


def run(cc, tmp_path):
    (plan,) = plans_for(STUDY.format(cc=cc), tmp_path)
    backend = SimBackend()
    backend.check([plan])
    return plan, backend.run(plan, tmp_path)


def goodput_bps(outcome):
    series = outcome.series
    last = {}
    for s, d in zip(series["stream"], series["delivered_bytes"], strict=True):
        last[s] = d
    return sum(last.values()) * 8 / 4.0


def test_a_port_runs_in_the_simulator_as_its_native_twin(tmp_path):
    _, bpf = run("bpf:htcp", tmp_path)
    _, native = run("htcp", tmp_path)
    assert bpf.facts["ccas"]["bpf:htcp"]["kind"] == "port"
    assert bpf.facts["ccas"]["bpf:htcp"]["file"] == "bpf/cca/htcp.bpf.c"
    # Same code, same path, same seed: the same goodput to 0.1 %
    # (measured 0.01 % on 100 Mbit/s, 40 ms).
    assert goodput_bps(bpf) == pytest.approx(goodput_bps(native), rel=1e-3)


def test_a_users_source_is_compiled_and_runs(tmp_path):
    (tmp_path / "mine.bpf.c").write_text(USER_CCA)
    plan, out = run("bpf:mine.bpf.c", tmp_path)
    cc = plan.flows[0].cc
    assert cc == f"bpf:{tmp_path / 'mine.bpf.c'}", "a relative path is the study file's"
    assert out.facts["ccas"][cc]["kind"] == "source" and len(out.facts["ccas"][cc]["object_sha256"]) == 64
    # Alone on a 1-BDP buffer, an AIMD flow fills the link: at least 80 %.
    assert goodput_bps(out) > 0.8 * 100e6, goodput_bps(out)


def test_a_write_linux_forbids_is_refused_at_load(tmp_path):
    bad = USER_CCA.replace("ca->losses++;", "ca->losses++; tcp_sk(sk)->srtt_us = 1;")
    (tmp_path / "bad.bpf.c").write_text(bad)
    with pytest.raises(BackendUnavailable, match=r"writes tcp_sock\.srtt_us.*may not write"):
        run("bpf:bad.bpf.c", tmp_path)


def test_a_field_the_simulator_lacks_is_named(tmp_path):
    src = USER_CCA.replace("__u32 w = tcp_sk(sk)->snd_cwnd * 7 / 10;",
                           "__u32 w = tcp_sk(sk)->snd_cwnd * 7 / 10 + BPF_CORE_READ(tcp_sk(sk), rcv_wnd);")
    src = src.replace("struct mine { __u32 losses; };",
                      "struct mine { __u32 losses; };\n"
                      "struct tcp_sock___x { __u32 rcv_wnd; } __attribute__((preserve_access_index));")
    src = src.replace("BPF_CORE_READ(tcp_sk(sk), rcv_wnd)", "((struct tcp_sock___x *)sk)->rcv_wnd")
    (tmp_path / "lacks.bpf.c").write_text(src)
    with pytest.raises(BackendUnavailable, match=r"tcp_sock\.rcv_wnd is a field the simulator does not model"):
        run("bpf:lacks.bpf.c", tmp_path)


def test_bad_names_are_refused_with_the_reason(tmp_path):
    with pytest.raises(BackendUnavailable, match=r"flows\.0\.cc: bpf:nosuch: no port named 'nosuch'.*htcp"):
        run("bpf:nosuch", tmp_path)
    with pytest.raises(BackendUnavailable, match=r"missing\.bpf\.c: No such file"):
        run("bpf:missing.bpf.c", tmp_path)
    (tmp_path / "broken.bpf.c").write_text("int x = ;\n")
    with pytest.raises(BackendUnavailable, match=r"clang failed on .*broken\.bpf\.c"):
        run("bpf:broken.bpf.c", tmp_path)
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(BackendUnavailable, match=r"expected a port name"):
        run("bpf:x.txt", tmp_path)


def test_relative_paths_follow_the_study_file(tmp_path):
    raw = {"flows": [{"cc": "bpf:a/x.bpf.c"}, {"cc": "bpf:htcp"}, {"cc": "cubic"}],
           "sweep": {"flows.0.cc": ["bpf:y.o", "reno"]}}
    out = bpfcc.relative_to(raw, tmp_path)
    assert out["flows"][0]["cc"] == f"bpf:{tmp_path / 'a' / 'x.bpf.c'}"
    assert out["flows"][1]["cc"] == "bpf:htcp" and out["flows"][2]["cc"] == "cubic"
    assert out["sweep"]["flows.0.cc"] == [f"bpf:{tmp_path / 'y.o'}", "reno"]


# A CCA made of the kernel's CUBIC, through the kfuncs tcp_cubic.c exports
# (tcp_cubic_check_kfunc_ids), as the kernel's selftest bpf_cc_cubic.c
# does: in the simulator they run its own CUBIC.
KERNEL_CUBIC_CCA = r"""
#include "fp_kernel.h"
char _license[] SEC("license") = "GPL";
extern void cubictcp_init(struct sock *sk) __ksym;
extern __u32 cubictcp_recalc_ssthresh(struct sock *sk) __ksym;
extern void cubictcp_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern void cubictcp_state(struct sock *sk, __u8 new_state) __ksym;
extern void cubictcp_cwnd_event(struct sock *sk, int event) __ksym;
extern void cubictcp_acked(struct sock *sk, const struct ack_sample *sample) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

SEC("struct_ops") void BPF_PROG(k_init, struct sock *sk) { cubictcp_init(sk); }
SEC("struct_ops") __u32 BPF_PROG(k_ssthresh, struct sock *sk) { return cubictcp_recalc_ssthresh(sk); }
SEC("struct_ops") void BPF_PROG(k_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{ cubictcp_cong_avoid(sk, ack, acked); }
SEC("struct_ops") void BPF_PROG(k_state, struct sock *sk, __u8 s) { cubictcp_state(sk, s); }
SEC("struct_ops") void BPF_PROG(k_event, struct sock *sk, int ev) { cubictcp_cwnd_event(sk, ev); }
SEC("struct_ops") void BPF_PROG(k_acked, struct sock *sk, const struct ack_sample *sample)
{ cubictcp_acked(sk, sample); }
SEC("struct_ops") __u32 BPF_PROG(k_undo, struct sock *sk) { return tcp_reno_undo_cwnd(sk); }

SEC(".struct_ops.link")
struct tcp_congestion_ops kcubic = {
	.init = (void *)k_init, .ssthresh = (void *)k_ssthresh, .cong_avoid = (void *)k_cong_avoid,
	.set_state = (void *)k_state, .cwnd_event = (void *)k_event, .pkts_acked = (void *)k_acked,
	.undo_cwnd = (void *)k_undo, .name = "kcubic",
};
"""


def test_the_kernels_cubic_kfuncs_run_the_simulators_cubic(tmp_path):
    (tmp_path / "kcubic.bpf.c").write_text(KERNEL_CUBIC_CCA)
    _, bpf = run("bpf:kcubic.bpf.c", tmp_path)
    _, native = run("cubic", tmp_path)
    # cubictcp_* are CUBIC's own functions: the same run as the native
    # algorithm (undo_cwnd is tcp_reno_undo_cwnd, as CUBIC's own).
    assert goodput_bps(bpf) == pytest.approx(goodput_bps(native), rel=1e-6)
