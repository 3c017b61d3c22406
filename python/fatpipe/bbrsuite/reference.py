"""The right-hand sides of the BBR draft's criteria as expressions over one
row of a run's tables: "2 x bdp", "bdp x cwnd_gain + extra_acked",
"max(rs_tx_in_flight, 0.7 x min(bdp, cwnd))". Names are the draft's
variables (bbrsuite.checks.COLUMNS), read from the row the criterion
judges (an event, or a series sample), or the run's constants
(payload_rate, mss_bits, ...). `x` is multiplication, as the draft writes
it; min, max, ceil and log2 are the only calls.

Evaluation walks a parsed Python expression restricted to numbers, names,
+ - * / and those calls: nothing else is accepted."""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping

FUNCTIONS: dict[str, Callable[..., float]] = {"min": min, "max": max, "ceil": math.ceil, "log2": math.log2}
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Div: lambda a, b: a / b}


class Unknown(Exception):
    """A name the row and the run do not give (the message says which)."""


def _python(expr: str) -> str:
    """The draft's notation as a Python expression: `x` between operands
    is *, dotted run keys (aggregation.interval) become one name."""
    out = re.sub(r"(?<=[\w)])\s+x\s+(?=[\w(])", " * ", expr.strip())
    return out.replace(".", "_DOT_") if re.search(r"[A-Za-z]\.[A-Za-z]", out) else out


def parts(expr: str) -> list[str]:
    """The comma-separated members of a list reference ("a, b, c"), or the
    expression itself (commas inside calls do not split)."""
    out, depth, cur = [], 0, ""
    for ch in expr:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*out, cur.strip()] if cur.strip() else out


def evaluate(expr: str, lookup: Callable[[str], float | None]) -> float:
    """The value of `expr`, names read through `lookup` (None: unknown)."""
    tree = ast.parse(_python(expr), mode="eval")

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            name = node.id.replace("_DOT_", ".")
            value = lookup(name)
            if value is None:
                raise Unknown(name)
            return float(value)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS \
                and not node.keywords:
            return float(FUNCTIONS[node.func.id](*(walk(a) for a in node.args)))
        raise Unknown(f"'{ast.unparse(node)}' (only numbers, names, + - * / and {', '.join(FUNCTIONS)})")

    return walk(tree)


def lookup_in(*sources: Mapping[str, float | None]) -> Callable[[str], float | None]:
    """A lookup that tries each mapping in turn; None and NaN are missing,
    except `unbounded` (+infinity, an unset inflight bound)."""
    def lookup(name: str) -> float | None:
        if name == "unbounded":
            return math.inf
        for source in sources:
            value = source.get(name)
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                return value
        return None
    return lookup
