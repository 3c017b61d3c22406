"""path.emulator on the kernel backend (root): "netem" is refused before
the run where the running kernel has no netem, naming the key and the
kernel option, and applied with netem options where it has; "linkem"
moves a path through fatpipe-linkem."""

import os
import subprocess
from dataclasses import replace

import pytest
from plans import bulk_plan

from fatpipe.backends.base import Aggregation, BackendUnavailable, GilbertElliott, Jitter, PathDynamics, RunPlan
from fatpipe.backends.kernel import KernelBackend
from fatpipe.backends.kernel.doctor import doctor
from fatpipe.linuxpath.linkem import find_linkem
from fatpipe.linuxpath.netem_map import direction_options
from fatpipe.linuxpath.qdisc import netem_qdisc_args

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

RATE_BPS, RTT_S = 20e6, 0.020


def has_netem() -> bool:
    return any(c.name == "netem" and c.ok for c in doctor())


def moving(run_id: str, emulator: str, dynamics: PathDynamics, loss: float = 0.0) -> RunPlan:
    base = bulk_plan(run_id, cc="cubic", streams=1, rate_bps=RATE_BPS, rtt_s=RTT_S, loss=loss, duration_s=3.0,
                     warmup_s=0.5, seed=7)
    return replace(base, dynamics=dynamics, emulator=emulator, sample_interval_s=0.25)


GE = PathDynamics(gilbert_elliott=GilbertElliott(r=0.25, bad_loss=1.0), jitter=Jitter(deviation_s=0.001))


def test_netem_is_refused_before_the_run_where_the_kernel_has_none(tmp_path):
    if has_netem():
        pytest.skip("the running kernel has netem (test_netem_applies_the_moving_path runs instead)")
    plan = moving("netem-missing", "netem", GE, loss=0.002)
    with pytest.raises(BackendUnavailable) as e:
        KernelBackend().check([plan])
    msg = str(e.value)
    assert 'path.emulator = "netem"' in msg and "CONFIG_NET_SCH_NETEM" in msg, msg
    # And by the path itself, before any delay line exists.
    with pytest.raises(ValueError) as e:
        KernelBackend().run(plan, tmp_path / plan.run_id)
    assert 'path.emulator = "netem"' in str(e.value) and "CONFIG_NET_SCH_NETEM" in str(e.value), str(e.value)


def test_netem_applies_the_moving_path_where_the_kernel_has_it(tmp_path):
    if not has_netem():
        pytest.skip("the running kernel has no netem (CONFIG_NET_SCH_NETEM)")
    plan = moving("netem-ge", "netem", GE, loss=0.002)
    KernelBackend().check([plan])
    out = KernelBackend().run(plan, tmp_path / plan.run_id)
    assert out.path.emulator == "netem", out.path
    # About 0.2 % of ~5000 segments lost in bursts: Linux retransmits some.
    assert max(out.series["retrans_segments"]) > 0, out.series["retrans_segments"]


def test_linkem_moves_a_path_when_asked(tmp_path):
    if find_linkem() is None:
        pytest.skip("fatpipe-linkem is not built (cargo build --release -p fatpipe-linkem)")
    plan = moving("linkem-jitter", "linkem", PathDynamics(jitter=Jitter(deviation_s=0.002, reorder=True)))
    KernelBackend().check([plan])
    out = KernelBackend().run(plan, tmp_path / plan.run_id)
    assert out.path.emulator == "linkem-nfqueue", out.path
    delivered = max(out.series["delivered_bytes"])
    seen = f"{out.path.reordered} reordered, {delivered} bytes delivered"
    assert out.path.reordered > 0, seen  # linkem's jitter, with reordering as asked
    assert delivered * 8 / 3.0 > 0.2 * RATE_BPS, seen


def test_tc_reads_every_mapped_option():
    # tc parses netem's options before it asks the kernel: where the kernel
    # has no netem only the kernel's answer fails, never tc's parsing.
    every = PathDynamics(gilbert_elliott=GilbertElliott(r=0.3, bad_loss=0.8, good_loss=0.001),
                         jitter=Jitter(deviation_s=0.002, distribution="normal", reorder=False, direction="both"),
                         aggregation=Aggregation(direction="data", interval_s=0.004, bytes=65536))
    ns = f"netem-map-test-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for direction, loss in (("data", 0.01), ("ack", 0.0)):
            args = netem_qdisc_args("lo", direction_options(direction, 0.01, loss, every))
            got = subprocess.run(["ip", "netns", "exec", ns, *args], capture_output=True, text=True)
            if has_netem():
                assert got.returncode == 0, (args, got.stderr)
            else:
                assert got.stderr.strip() == "Error: Specified qdisc kind is unknown.", (args, got.stderr)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=True)
