"""Generic layers name no backend: they ask the registry (fatpipe.backends)
for names, instances and capabilities (base.Backend).

The rule, checked for every registered backend name (from the registry) in
every module of python/fatpipe:

* Backend-specific code may name backends: a backend's own code
  (``backends/<name>.py`` or ``backends/<name>/`` for a registered name),
  the registry (``backends/__init__.py``), and the advisor (``advisor/``),
  an application built on two backends by design: it simulates its
  candidates on the simulator (its packets per second, its CCAs) and
  measures a testbed's path with the hosts backend.
* Every other module is generic. Its code never names a backend: no string
  constant equals a backend name or holds one quoted (``'sim'``,
  ``"kernel"``, `` `hosts` ``, as a message that tells the user to pick
  one would), and it imports no backend module (only the registry and
  ``backends.base``).
* Prose may name backends: comments and docstrings (any string statement
  without effect) describe which backends fill a column or set a default
  and change nothing at run time.
* A backend name that is also a key of the study spec or the testbed
  (a field of their models: ``[hosts]``) is that key where it indexes a
  mapping (``raw["hosts"]``, ``raw.get("hosts")``, ``.setdefault``,
  ``.pop``), keys a dict display (``{"hosts": …}``), or
  is compared with something that is not a backend (``head == "hosts"``,
  but not ``plan.backend == "hosts"``).
* A schema upgrade (``upgrade_*`` in schema.py) names the backend whose
  stored rows of an older schema version it rewrites: that is a fact about
  files already written, which no registered backend can state.

Non-Python files shipped with the package (the report's JavaScript) hold no
backend name in quotes.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from fatpipe import backends
from fatpipe.spec import Spec
from fatpipe.testbed import Testbed

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "fatpipe"
NAMES = backends.backend_names()
# Backend names that are also spec or testbed keys.
KEY_NAMES = set(NAMES) & (set(Spec.model_fields) | set(Testbed.model_fields))
# Applications built on particular backends (see the module doc).
BACKEND_APPLICATIONS = ("advisor",)
# Methods whose first argument is a mapping's key.
MAPPING_METHODS = ("get", "setdefault", "pop")
QUOTED = re.compile("[\"'`](" + "|".join(map(re.escape, NAMES)) + ")[\"'`]")


def _backend_specific(rel: Path) -> bool:
    parts = rel.parts
    if parts[0] in BACKEND_APPLICATIONS:
        return True
    if parts[0] != "backends":
        return False
    if rel == Path("backends/__init__.py"):
        return True
    return len(parts) > 1 and (parts[1] in NAMES or Path(parts[1]).stem in NAMES)


def generic_files() -> list[Path]:
    files = [p for p in sorted(PACKAGE.rglob("*"))
             if p.is_file() and p.suffix in (".py", ".js") and "__pycache__" not in p.parts]
    return [p for p in files if not _backend_specific(p.relative_to(PACKAGE))]


def _prose(tree: ast.AST) -> set[int]:
    """ids of the string constants that are statements (docstrings and the like)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _used_as_key(const: ast.Constant, parent: ast.AST | None) -> bool:
    if isinstance(parent, ast.Subscript) and parent.slice is const:
        return True
    if isinstance(parent, ast.Dict) and any(k is const for k in parent.keys):
        return True
    if (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
            and parent.func.attr in MAPPING_METHODS and parent.args and parent.args[0] is const):
        return True
    if isinstance(parent, ast.Compare):
        others = [parent.left, *parent.comparators]
        return all("backend" not in ast.unparse(o) for o in others if o is not const)
    return False


def _in_schema_upgrade(rel: Path, const: ast.Constant, parents: dict[int, ast.AST]) -> bool:
    if rel != Path("schema.py"):
        return False
    node = parents.get(id(const))
    while node is not None:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("upgrade_"):
            return True
        node = parents.get(id(node))
    return False


def _imported_modules(node: ast.AST, rel: Path) -> list[str]:
    """Dotted fatpipe modules an import statement names (relative imports resolved)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        package = ["fatpipe", *rel.parent.parts]
        base = package[: len(package) - (node.level - 1)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    return [module] + [f"{module}.{a.name}" for a in node.names]


def mentions(rel: Path, text: str) -> list[str]:
    """Where the generic file `rel` (relative to the package) holding `text`
    names a backend against the rule of the module doc."""
    if rel.suffix != ".py":
        return [f"{rel}:{n}: {line.strip()}" for n, line in enumerate(text.splitlines(), 1) if QUOTED.search(line)]
    tree = ast.parse(text)
    prose, parents = _prose(tree), _parents(tree)
    found = []
    for node in ast.walk(tree):
        backend_modules = [m for m in _imported_modules(node, rel) for name in NAMES
                           if m == f"fatpipe.backends.{name}" or m.startswith(f"fatpipe.backends.{name}.")]
        if backend_modules:
            found.append(f"{rel}:{node.lineno}: imports {backend_modules[0]}")
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in prose:
            continue
        if node.value in NAMES:
            if node.value in KEY_NAMES and _used_as_key(node, parents.get(id(node))):
                continue
        elif not QUOTED.search(node.value):
            continue
        if _in_schema_upgrade(rel, node, parents):
            continue
        found.append(f"{rel}:{node.lineno}: {ast.get_source_segment(text, node) or repr(node.value)}")
    return found


def test_the_rule_covers_every_module_and_every_registered_backend():
    assert {"sim", "kernel", "hosts"} <= set(NAMES)  # the registry is where the names come from
    rels = {p.relative_to(PACKAGE) for p in generic_files()}
    for generic in ("spec.py", "study.py", "cli.py", "schema.py", "estimate.py", "results.py", "loaded.py",
                    "backends/base.py", "cluster/runner.py", "importers/study.py", "report/html.py",
                    "report/timeseries.js"):
        assert Path(generic) in rels
    for specific in ("backends/__init__.py", "backends/sim.py", "backends/kernel/path.py",
                     "backends/hosts/agent.py", "advisor/plan.py"):
        assert Path(specific) not in rels


@pytest.mark.parametrize("path", generic_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_generic_module_names_no_backend(path):
    assert mentions(path.relative_to(PACKAGE), path.read_text()) == []


def test_the_check_finds_a_backend_named_in_code_a_message_or_an_import():
    cases = {
        'if plan.backend == "kernel":\n    pass\n': 1,
        'x = {"backends": ["hosts"]}\n': 1,
        'get("sim")\n': 1,
        'raise ValueError(f"use --backend \'sim\' for {x}")\n': 1,
        "from ..backends.kernel import path\n": 1,
        "from ..backends import sim\n": 1,
        'if plan.backend == "hosts":\n    pass\n': 1,
        # Prose and spec keys are not backends.
        '"""Runs on the "sim" backend by default."""\n# the "kernel" backend\n': 0,
        'raw["hosts"]\nx = {"hosts": {}}\nu.setdefault("hosts", {})\nif head == "hosts":\n    pass\n': 0,
        'choose("hosts")\n': 1,
        "from ..backends import get_backend\nfrom ..backends.base import Backend\n": 0,
    }
    for code, expected in cases.items():
        assert len(mentions(Path("cluster/sample.py"), code)) == expected, code
    assert mentions(Path("schema.py"), 'def upgrade_x(df):\n    return df["backend"] == "sim"\n') == []
    assert len(mentions(Path("schema.py"), 'def other(df):\n    return df["backend"] == "sim"\n')) == 1
    assert len(mentions(Path("report/x.js"), "if (row.backend === 'kernel') {}\n")) == 1
