"""fatpipe.linuxpath is the Linux path model both Linux backends import:
importing it (or the hosts backend) loads nothing of the kernel backend's
package (its cleanup registry, BPF loader, namespaces), and no backend
loads the summary layer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINUXPATH = ROOT / "python" / "fatpipe" / "linuxpath"
HOSTS = ROOT / "python" / "fatpipe" / "backends" / "hosts"
# Programs run by path on the end hosts (they import each other as
# top-level modules), not modules of the package.
ENGINE_SCRIPTS = {"engine", "sampling"}


def _loaded_after_importing(modules: list[str]) -> list[str]:
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'python')!r})\n"
            "import importlib, json\n"
            f"for m in {modules!r}:\n"
            "    importlib.import_module(m)\n"
            "print(json.dumps(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(out.stdout)


def _package_modules(directory: Path, package: str, skip: set[str] = frozenset()) -> list[str]:
    return [package] + [f"{package}.{p.stem}" for p in sorted(directory.glob("*.py"))
                        if p.stem != "__init__" and p.stem not in skip]


def test_importing_the_linux_path_model_loads_nothing_of_the_kernel_backend():
    modules = _package_modules(LINUXPATH, "fatpipe.linuxpath", ENGINE_SCRIPTS)
    assert "fatpipe.linuxpath.config" in modules and "fatpipe.linuxpath.flows" in modules
    loaded = _loaded_after_importing(modules)
    assert set(modules) <= set(loaded)
    kernel = [m for m in loaded if m.startswith("fatpipe.backends.kernel")]
    assert kernel == [], kernel


def test_the_hosts_backend_loads_nothing_of_the_kernel_backend_and_no_backend_loads_the_summary():
    hosts = _package_modules(HOSTS, "fatpipe.backends.hosts")
    loaded = _loaded_after_importing(hosts)
    assert "fatpipe.backends.hosts.hostrun" in loaded
    assert [m for m in loaded if m.startswith("fatpipe.backends.kernel")] == []
    assert "fatpipe.summary" not in loaded
    loaded = _loaded_after_importing(["fatpipe.backends.kernel"])
    assert "fatpipe.backends.kernel.cleanup" in loaded  # the check above can see a kernel module
    assert "fatpipe.summary" not in loaded


def test_spec_and_testbed_do_not_import_each_other():
    loaded = _loaded_after_importing(["fatpipe.testbed"])
    assert "fatpipe.spec" not in loaded and "fatpipe.spec_errors" in loaded
