"""Python's CCA traits come from the simulator's registry (fatpipe.ccas
reading fatpipe._native.cca_registry()), not from lists of its own."""

import subprocess
import sys
from pathlib import Path

from fatpipe import _native, ccas
from fatpipe.advisor import plan as advisor_plan
from fatpipe.advisor.request import validate_request
from fatpipe.report.page import CC_PALETTE, cc_color

ROOT = Path(__file__).resolve().parents[1]


def test_the_registry_is_the_binding_s_list_in_its_order():
    assert ccas.names() == list(_native.available_ccas())
    assert [c.name for c in ccas.registry()] == [d["name"] for d in _native.cca_registry()]
    assert len(set(ccas.names())) == len(ccas.names()) >= 14


def test_traits_follow_the_algorithms():
    assert ccas.rate_based() == {"bbr", "bbr3"}
    assert ccas.not_loss_bound() == {"bbr", "bbr3", "westwood"}
    assert ccas.linux_default() == "cubic"
    assert {c.name for c in ccas.registry() if c.needs_ecn} == {"dctcp"}
    assert {c.name for c in ccas.registry() if not c.linux_mainline} == {"bbr3"}
    assert ccas.traits("hybla") is None and ccas.index("hybla") is None


def test_the_advisor_s_default_candidates_are_the_registry_s_deployable_mainline_set():
    req = validate_request({"rate": "1Gbit", "rtt": "20ms"})
    mainline = [c.name for c in ccas.registry() if c.linux_mainline and not c.needs_ecn]
    assert sorted(req.ccas) == sorted(mainline)
    assert req.ccas[0] == "cubic", "Linux's default first"
    assert advisor_plan.baseline(req).cc == "cubic"


def test_the_loss_bound_reads_the_registry():
    req = validate_request({"rate": "1Gbit", "rtt": "20ms", "loss": 1e-3})
    for c in ccas.registry():
        bounded = advisor_plan.loss_bound_bps(req, c.name, 1448) != float("inf")
        assert bounded == c.loss_bound, c.name


def test_every_registry_cca_has_its_own_colour_and_unknown_names_fall_back():
    colours = [cc_color(n) for n in ccas.names()]
    assert len(set(colours)) == len(colours)
    assert set(colours) <= set(CC_PALETTE)
    assert cc_color("BBR") == cc_color("bbr")
    assert cc_color("hybla", 3) == "C3"


def test_importing_the_module_without_the_extension_gives_an_empty_registry():
    code = ("import sys; sys.modules['fatpipe._native'] = None\n"
            "from fatpipe import ccas\n"
            "from fatpipe.report.page import cc_color\n"
            "assert ccas.registry() == () and ccas.rate_based() == frozenset()\n"
            "assert ccas.deployable_defaults() == [] and ccas.linux_default() is None\n"
            "print(cc_color('cubic', 2))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"}, check=True)
    assert out.stdout.strip() == "C2"
