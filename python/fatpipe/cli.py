"""The `fatpipe` command."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

from . import __version__, estimate, live
from . import spec as spec_mod
from .backends import DEFAULT_BACKEND, backend_names, get_backend
from .backends.base import BackendUnavailable
from .cluster import ClusterError, ClusterSpecError
from .estimate import StudyTooBig
from .results import StoreError
from .study import AUTO, load_study, plan_runs, run_study, study_dir_default
from .tables import backend_comparison_table, summary_table


def _signal_as_interrupt(signum, frame):  # noqa: ARG001 - signal handler signature
    raise KeyboardInterrupt(f"signal {signum}")


def install_signal_handlers() -> None:
    """The CLI owns signals (backends only register cleanup): SIGTERM unwinds
    like Ctrl-C, as a KeyboardInterrupt, so every ``finally`` runs (a
    backend's namespaces, the store's consolidation); a SIGINT its parent
    left ignored (a job started in the background) interrupts again.
    Only the main thread can install handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGTERM, _signal_as_interrupt)
    if signal.getsignal(signal.SIGINT) in (signal.SIG_DFL, signal.SIG_IGN):
        signal.signal(signal.SIGINT, signal.default_int_handler)


class OutputClosed(Exception):
    """Standard output was closed (``fatpipe run … | head``) while a study ran."""


# Exit status of a study stopped because its output was closed: what a shell
# reports for a process killed by SIGPIPE (128 + 13).
EXIT_OUTPUT_CLOSED = 128 + signal.SIGPIPE


class Output:
    """Lines to standard output, flushed one by one so a closed pipe is
    noticed at the next line. While a study runs (`stop_when_closed`) a
    closed output stops it: the study did not finish and the command exits
    EXIT_OUTPUT_CLOSED, finished runs kept for a resume. Afterwards lines to
    a closed output are dropped."""

    def __init__(self, to_stderr: bool = False) -> None:
        self.closed = False
        self.stop_when_closed = False
        self.file = sys.stderr if to_stderr else None  # None: sys.stdout when printing

    def __call__(self, line: str = "") -> None:
        if self.closed:
            return
        try:
            print(line, flush=True, file=self.file)
        except BrokenPipeError:
            self.closed = True
            _silence_stdout()
            if self.stop_when_closed:
                raise OutputClosed from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _to_terminal(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def cmd_run(args: argparse.Namespace) -> int:
    say = Output(to_stderr=args.json_stream)
    say.stop_when_closed = True
    with contextlib.ExitStack() as stack:
        if args.json_stream:
            # Standard output carries the events alone (live.py); the
            # progress and tables go to standard error.
            events = Output()
            events.stop_when_closed = True
            stack.enter_context(live.streaming(lambda event: events(live.json_line(event))))
        if sys.stderr.isatty():
            # A terminal: the current run's goodput as its samples arrive.
            stack.enter_context(live.streaming(live.GoodputLine(_to_terminal), replay=False))
        result = run_study(args.study, backends=args.backend, out=args.out, jobs=args.jobs or None,
                           emit=say, force=args.force, testbed=args.testbed, cluster=args.cluster,
                           capture=args.capture)
    say.stop_when_closed = False
    out, counts = result.store.root, result.counts
    say(f"\nwrote {out}/runs.parquet ({counts['runs']} rows), series.parquet ({counts.get('series', 0)} rows)")
    if counts["runs"]:
        runs = result.store.runs_table()
        say()
        say(summary_table(runs))
        comparison = backend_comparison_table(runs)
        if comparison:
            say()
            say(comparison)
    if not args.no_report:
        _maybe_report(out, say)
    return 1 if result.progress.failed else 0


def _maybe_report(out: Path, say: Output) -> None:
    """Writes the study's report; without one of the report's optional
    dependencies, says so in one line instead. Any other ImportError (a bug
    in fatpipe.report) propagates."""
    from .report import OPTIONAL_DEPENDENCIES, write_report
    try:
        path = write_report(out)
    except ImportError as e:
        missing = (e.name or "").partition(".")[0]
        if missing not in OPTIONAL_DEPENDENCIES:
            raise
        say(f"no report: {missing} is not installed (the report's figures need it); "
            f"install it and run `fatpipe report {out}`")
        return
    say(f"report: {path}")


def cmd_check(args: argparse.Namespace) -> int:
    spec, raw = load_study(args.study, args.backend)
    plans = plan_runs(spec, raw, args.backend or None)
    print(f"{args.study}: valid; {len(plans)} runs")
    for p in plans[: args.show]:
        print(f"  {p.run_id} seed={p.seed} {p.swept}")
    cost = estimate.study_cost(plans, args.jobs or os.cpu_count() or 1)
    for line in cost.lines():
        print(line)
    out = Path(args.out) if args.out else study_dir_default(spec)
    for problem in estimate.over_limits(cost, out):
        print(f"over a limit: {problem}; `fatpipe run` refuses it without --force")
    return 0


def _testbed_backends(args: argparse.Namespace):
    """(testbed or None, [(name, backend, kwargs)]): with --testbed only the
    backends that work on a testbed (``takes_testbed``), handed the testbed."""
    testbed = spec_mod.load_testbed(args.testbed) if args.testbed else None
    chosen = []
    for name in backend_names():
        backend = get_backend(name)
        if testbed is None:
            chosen.append((name, backend, {}))
        elif backend.takes_testbed:
            chosen.append((name, backend, {"testbed": testbed}))
    return testbed, chosen


def cmd_doctor(args: argparse.Namespace) -> int:
    testbed, chosen = _testbed_backends(args)
    ready = True
    for name, backend, kw in chosen:
        print(f"{name} backend:")
        try:
            report = backend.doctor(**kw)
            print(report.render())
            ready = ready and report.usable
        except BackendUnavailable as e:
            print(f"  unavailable: {e}")
            ready = False
    # Scripts check a testbed by the exit status; plain `doctor` informs.
    return 1 if testbed is not None and not ready else 0


def cmd_clean(args: argparse.Namespace) -> int:
    _, chosen = _testbed_backends(args)
    removed = [f"{name}: {item}" for name, backend, kw in chosen for item in backend.clean(**kw)]
    if removed:
        print("fatpipe clean:")
        for item in removed:
            print(f"  {item}")
    else:
        print("nothing left behind by fatpipe")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report
    try:
        path = write_report(Path(args.dir), run_id=args.run, references=args.references)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"report: {path}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare
    try:
        path = compare(Path(args.dir_a), Path(args.dir_b), Path(args.out) if args.out else None)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"comparison: {path}")
    return 0


ADVISE_FLAGS = ("rate", "rtt", "loss", "mtu", "buffer", "rmem", "wmem", "stream_cap", "ccas", "max_streams",
                "competing", "budget", "host_profile")


def cmd_advise(args: argparse.Namespace) -> int:
    from .advisor import load_request, run_advice, validate_request
    from .advisor.render import terminal_text, write_html
    flags = {k: getattr(args, k) for k in ADVISE_FLAGS if getattr(args, k) is not None}
    measured: list[str] = []
    probe = {k: v for k, v in (("--measure-duration", args.measure_duration), ("--measure-reps", args.measure_reps))
             if v is not None}
    if probe and not args.testbed:
        print(f"error: {', '.join(probe)} only go with --testbed (they shape its path measurement)", file=sys.stderr)
        return 2
    if args.testbed:
        from .advisor.measure import DEFAULT_PROBE_DURATION_S, DEFAULT_PROBE_REPS, measure_path, probe_problem
        from .units import UnitError, parse_time_s
        try:
            duration_s = parse_time_s(args.measure_duration) if args.measure_duration else DEFAULT_PROBE_DURATION_S
        except UnitError as e:
            print(f"error: --measure-duration: {e}", file=sys.stderr)
            return 2
        reps = DEFAULT_PROBE_REPS if args.measure_reps is None else args.measure_reps
        problem = probe_problem(duration_s, reps)
        if problem:
            print(f"error: --measure-duration / --measure-reps: {problem}", file=sys.stderr)
            return 2
        path = measure_path(args.testbed, out=Path(args.out or "results/advise-measure") / "measure", emit=print,
                            duration_s=duration_s, reps=reps)
        measured = path.lines()
        for line in measured:
            print(line)
        flags = {**path.request_keys(), **flags}
    req = load_request(args.request, flags) if args.request else validate_request(flags, "(flags)")
    advice = run_advice(req, out=args.out, jobs=args.jobs or None, emit=print, measured=measured)
    print()
    print(terminal_text(advice))
    print(f"page: {write_html(advice)}")
    return 0


def _add_advise(sub) -> None:
    adv = sub.add_parser("advise", help="which CCA, streams, MTU and socket buffers for a path (sim sweep)",
                         description="Plan and run a sim sweep over the choices for your path and rank "
                                     "them (docs/advise.md). Sizes and rates take units: 10Gbit, 70ms, 6MiB.")
    adv.add_argument("request", nargs="?", help="a TOML file with the keys below (flags override it)")
    adv.add_argument("--rate", help="bottleneck rate, e.g. 10Gbit")
    adv.add_argument("--rtt", help="base round-trip time, e.g. 70ms")
    adv.add_argument("--loss", type=float, help="random loss per packet, e.g. 1e-4 (default 0)")
    adv.add_argument("--mtu", help="MTUs the path allows, e.g. 1500,9000 (default 1500)")
    adv.add_argument("--buffer", help="bottleneck buffer: bytes, packets or BDPs (default 1bdp)")
    adv.add_argument("--rmem", help="the hosts' tcp_rmem max now (default Linux's 6 MiB)")
    adv.add_argument("--wmem", help="the hosts' tcp_wmem max now (default Linux's 4 MiB)")
    adv.add_argument("--stream-cap", dest="stream_cap", help="most one stream can send (CPU-bound host)")
    adv.add_argument("--host-profile", dest="host_profile",
                     help="the hosts' profile (python/fatpipe/data/host_profiles.toml): caps each stream at what "
                          "one core drives and states the CPU the advice needs (default: infinitely fast hosts)")
    adv.add_argument("--ccas", help="CCAs you can deploy, comma-separated (default: Linux's, see docs/advise.md)")
    adv.add_argument("--max-streams", dest="max_streams", type=int, help="most parallel streams (default 16)")
    adv.add_argument("--competing", help="CCA of traffic sharing the path (one stream), e.g. cubic")
    adv.add_argument("--budget", help="wall time to aim for (default 60s)")
    adv.add_argument("--jobs", type=int, default=0, help="runs at once (default: cores)")
    adv.add_argument("--out", help="directory of the advice's studies (default results/advise-<time>)")
    adv.add_argument("--testbed", help="measure the path sender -> receiver of this testbed first "
                                       "(hosts backend), then advise on what was measured")
    adv.add_argument("--measure-duration", dest="measure_duration",
                     help="with --testbed: each probe run's length, its first third a warm-up (default 6s)")
    adv.add_argument("--measure-reps", dest="measure_reps", type=int,
                     help="with --testbed: runs of each probe (default 3; 2 or more give the rate an interval)")
    adv.set_defaults(func=cmd_advise)


def cmd_bbr_cases(args: argparse.Namespace) -> int:
    from .bbrsuite.catalogue import load
    from .bbrsuite.suite import run_suite
    catalogue = load()
    cases = args.case.split(",") if args.case else None
    try:
        for c in cases or ():
            catalogue.case(c)
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    ccs = args.cc.split(",") if args.cc else None
    out = Path(args.out)
    results = run_suite(out, backend=args.backend, ccs=ccs, cases=cases)
    counts = {s: sum(r.status == s for r in results) for s in ("pass", "fail", "no verdict", "contrast", "not run")}
    print(f"\n{counts['pass']} passed, {counts['fail']} failed, {counts['no verdict']} without a verdict, "
          f"{counts['contrast']} run for contrast (not bbr3), {counts['not run']} not run; "
          f"table: {out / 'bbr-cases.md'}, data: {out / 'bbr-cases.json'}")
    return 0


def _add_bbr_cases(sub) -> None:
    bc = sub.add_parser("bbr-cases", help="run the IETF BBR draft's example test cases and check them",
                        description="Run each example test case of draft-ietf-ccwg-bbr (Appendix A) that the "
                                    "path model can express, with bbr3 and bbr, and evaluate its pass criteria "
                                    "from the run's tables (docs/bbr-test-cases.md).")
    bc.add_argument("--out", default="results/bbr-cases", help="directory of the cases' studies and the table")
    bc.add_argument("--backend", default=DEFAULT_BACKEND, choices=backend_names(),
                    help=f"backend to run on (default {DEFAULT_BACKEND}; the kernel runs bbr v1, not bbr3)")
    bc.add_argument("--cc", help="CCAs, comma-separated (default: bbr3,bbr)")
    bc.add_argument("--case", help="cases by id or slug, comma-separated (default: all)")
    bc.set_defaults(func=cmd_bbr_cases)


def cmd_conform(args: argparse.Namespace) -> int:
    from .conform.suite import format_text, run_all, to_json
    try:
        outcomes = run_all([Path(p) for p in args.scripts])
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        Path(args.json).write_text(to_json(outcomes)) if args.json != "-" else print(to_json(outcomes))
    if args.json != "-":
        print(format_text(outcomes, verbose=args.verbose))
    failed = any(o.status == "fail" for o in outcomes)
    unsupported = any(o.status == "unsupported" for o in outcomes)
    return 1 if failed or (args.strict and unsupported) else 0


def _add_conform(sub) -> None:
    cf = sub.add_parser("conform", help="run packetdrill scripts against the simulator's TCP",
                        description="Run scripts in packetdrill's language (Linux's own TCP test language) "
                                    "against the simulator's sender: pass, fail (first differing line, "
                                    "expected vs produced) or unsupported (the construct outside the model), "
                                    "with counts per directory (docs/conformance.md).")
    cf.add_argument("scripts", nargs="+", help=".pkt scripts or directories of them")
    cf.add_argument("--json", help="write the results as JSON to this file ('-': standard output only)")
    cf.add_argument("--strict", action="store_true", help="exit 1 when a script is unsupported, too")
    cf.add_argument("-v", "--verbose", action="store_true", help="list passing scripts as well")
    cf.set_defaults(func=cmd_conform)


def cmd_import_iperf3(args: argparse.Namespace) -> int:
    from .importers.iperf3 import Iperf3FormatError
    from .importers.study import import_iperf3
    try:
        store = import_iperf3(args.files, args.path, args.out, name=args.name)
    except (OSError, Iperf3FormatError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"\nwrote {store.root} ({len(args.files)} runs)")
    print(summary_table(store.runs_table()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="fatpipe", description="TCP congestion control lab for long fat networks")
    ap.add_argument("--version", action="version", version=f"fatpipe {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a study (resumes an interrupted one)")
    run.add_argument("study", help="study TOML file")
    run.add_argument("--out", help="result directory (default results/<study name>)")
    run.add_argument("--backend", action="append", choices=[*backend_names(), AUTO],
                     help="run on this backend instead of study.backends (repeatable); 'auto': each of the "
                          "study's backends that can run here (else the simulator), compared side by side")
    run.add_argument("--jobs", type=int, default=0,
                     help="runs at once where the backend allows it (default: cores)")
    run.add_argument("--no-report", action="store_true", help="skip the HTML report")
    run.add_argument("--testbed", help="run on the hosts of this testbed (a TOML file, or a study with one) "
                                       "instead of the study's own [testbed]")
    run.add_argument("--capture", action="store_true",
                     help="write each run's packets as pcap files (headers only) into its work directory, as a "
                          "[capture] section with its defaults would (docs/captures.md)")
    run.add_argument("--json-stream", dest="json_stream", action="store_true",
                     help="print each run's samples and events as JSON lines on standard output as they happen "
                          "(progress goes to standard error; docs/results.md, 'Live results')")
    run.add_argument("--force", action="store_true",
                     help="run even if the estimate exceeds the limits (disk, memory, series rows per run)")
    run.add_argument("--cluster", metavar="SPEC",
                     help="compute the runs on a Dask cluster: local[:N], tcp://HOST:PORT, ssh:HOST,HOST,… "
                          "or slurm:key=value,… (docs/cluster.md; needs fatpipe[cluster])")
    run.set_defaults(func=cmd_run)

    check = sub.add_parser("check", help="validate a study and list its runs")
    check.add_argument("study")
    check.add_argument("--backend", action="append", choices=backend_names())
    check.add_argument("--show", type=int, default=10, help="runs to list")
    check.add_argument("--out", help="result directory the estimate's disk check looks at "
                       "(default results/<study name>)")
    check.add_argument("--jobs", type=int, default=0, help="runs at once, for the wall-time guess (default: cores)")
    check.set_defaults(func=cmd_check)

    doctor = sub.add_parser("doctor", help="what each backend can do on this machine")
    doctor.add_argument("--testbed", help="check the hosts of this testbed (a TOML file, or a study with one)")
    doctor.set_defaults(func=cmd_doctor)

    clean = sub.add_parser("clean", help="remove what a crashed fatpipe left (namespaces, processes)")
    clean.add_argument("--testbed", help="clean the hosts of this testbed (a TOML file, or a study with one)")
    clean.set_defaults(func=cmd_clean)

    report = sub.add_parser("report", help="write DIR/report/report.html from a study's results")
    report.add_argument("dir", help="study result directory")
    report.add_argument("--run", help="run id whose time series to plot (default: the run with "
                        "the longest goodput collapse, else the first run)")
    report.add_argument("--references", metavar="STUDY_TOML",
                        help="show the [[references]] of this study file instead of the study's own "
                             "(e.g. results stored before the references were added)")
    report.set_defaults(func=cmd_report)

    cmp = sub.add_parser("compare", help="compare the grid points of two studies (B / A)")
    cmp.add_argument("dir_a", help="study result directory A (the reference)")
    cmp.add_argument("dir_b", help="study result directory B")
    cmp.add_argument("--out", help="output directory (default DIR_B/compare-vs-<A>)")
    cmp.set_defaults(func=cmd_compare)

    _add_advise(sub)
    _add_bbr_cases(sub)
    _add_conform(sub)
    imp = sub.add_parser("import", help="bring results made elsewhere into a study directory")
    imp_sub = imp.add_subparsers(dest="format", required=True)
    ip3 = imp_sub.add_parser("iperf3", help="`iperf3 -J` client outputs -> a study (compare it with `fatpipe "
                                            "compare`)")
    ip3.add_argument("files", nargs="+", help="iperf3 -J output files (one run each)")
    ip3.add_argument("--path", required=True,
                     help="the path they ran over, as [path] keys: rate=1Gbit,rtt=20ms[,loss=1e-4,buffer=1bdp,"
                          "mtu=1500,corruption=0]")
    ip3.add_argument("--out", required=True, help="study directory to write")
    ip3.add_argument("--name", help="study name (default: the directory's name)")
    ip3.set_defaults(func=cmd_import_iperf3)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    install_signal_handlers()
    try:
        return args.func(args)
    except (spec_mod.SpecError, StudyTooBig) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (BackendUnavailable, FileExistsError, StoreError, ClusterError, ClusterSpecError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OutputClosed:
        print("stopped: standard output was closed; finished runs are kept; run the same command "
              "again to resume", file=sys.stderr)
        return EXIT_OUTPUT_CLOSED
    except BrokenPipeError:
        # A command that runs nothing, piped into `head`: its output was cut.
        _silence_stdout()
        return EXIT_OUTPUT_CLOSED
    except KeyboardInterrupt:
        if args.command == "run":
            print("\ninterrupted: finished runs are kept; run the same command again to resume",
                  file=sys.stderr)
        else:
            print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
