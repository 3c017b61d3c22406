"""linkem's command line as the kernel backend builds it (pure)."""

from pathlib import Path

from fatpipe.linuxpath.linkem import LINKEM_RT_PRIORITY, RT_PRIORITY, QueueConfig, linkem_args


def test_linkem_runs_above_the_ack_napi_threads_real_time_priority():
    # At equal SCHED_FIFO priority a NAPI thread polling its ring held
    # linkem's threads off the CPU for milliseconds (delayline.py).
    args = linkem_args(Path("/bin/linkem"), [QueueConfig(0, "data", 0.01, 0.0)], 1, Path("/tmp/s.json"))
    prio = int(args[args.index("--rt-priority") + 1])
    assert prio == LINKEM_RT_PRIORITY > RT_PRIORITY
