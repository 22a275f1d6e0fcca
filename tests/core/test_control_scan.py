"""Every control in the book is an experiment: a scan of the chapters' code cells and of src/ for the forbidden kinds.

``run.check*(..., control=...)`` and ``run.empirical(..., control=...)`` take a control only from
``run.control(what, experiment, *args)`` (the same measurement on a modified run, computed in the run) or
``run.no_control(why)``; at run time :mod:`stagewise.core.checks.rows` refuses tuples, numbers, lambdas, builtins,
borrowed values and reorderings. What only the source shows is refused here: a control call whose arguments
are all literals, one that reverses a list (``reversed(``, ``[::-1]``), one that decides by an exact equality
(``==``, ``!=``), a lambda or a builtin as the experiment, a ``control=`` given as a tuple or a literal.
The test of the scanner itself (control) plants each forbidden pattern and requires it to be found.
"""
from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import pytest

from stagewise.core.checks.rows import FORBIDDEN_EXPERIMENTS
from stagewise.core.run.registry import CHAPTERS_DIR, PROJECT_ROOT

CHECK_CALLS = {"check", "check_below", "check_above", "check_between", "check_true", "empirical"}
CONTROL_MAKERS = {"control", "no_control", "none"}


def _literal(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_literal(e) for e in node.elts)
    return isinstance(node, ast.Constant)


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def violations(source: str, where: str) -> list[str]:
    """The forbidden control patterns in ``source`` (Python), each as ``where:line: what``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = _name(node.func)
        if called in CHECK_CALLS and isinstance(node.func, ast.Attribute):
            for kw in node.keywords:
                if kw.arg != "control":
                    continue
                value = kw.value
                if isinstance(value, (ast.Tuple, ast.List, ast.Constant, ast.Lambda)):
                    found.append(f"{where}:{node.lineno}: control= given as a {type(value).__name__.lower()}, "
                                 "not run.control(...) or run.no_control(why)")
                elif isinstance(value, ast.Call) and _name(value.func) not in CONTROL_MAKERS:
                    found.append(f"{where}:{node.lineno}: control= built by {_name(value.func)}(), not by "
                                 "run.control(...) or run.no_control(why)")
        if called == "control" and isinstance(node.func, ast.Attribute) and len(node.args) >= 2:
            experiment, rest = node.args[1], node.args[2:] + [kw.value for kw in node.keywords]
            if isinstance(experiment, ast.Lambda):
                found.append(f"{where}:{node.lineno}: a lambda as a control's experiment")
            elif _name(experiment) in FORBIDDEN_EXPERIMENTS and isinstance(experiment, ast.Name):
                found.append(f"{where}:{node.lineno}: the builtin {_name(experiment)}() as a control's experiment")
            if rest and all(_literal(a) for a in rest):
                found.append(f"{where}:{node.lineno}: every argument of the control is a literal")
            for inner in ast.walk(node):
                if isinstance(inner, ast.Call) and _name(inner.func) == "reversed":
                    found.append(f"{where}:{node.lineno}: a control that reverses a list")
                if (isinstance(inner, ast.Subscript) and isinstance(inner.slice, ast.Slice)
                        and inner.slice.step is not None and _literal(inner.slice.step)):
                    found.append(f"{where}:{node.lineno}: a control that reverses or strides a list ([::-1])")
                if isinstance(inner, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in inner.ops):
                    found.append(f"{where}:{node.lineno}: a control decided by an exact equality")
    return found


def _sources():
    for path in sorted(CHAPTERS_DIR.glob("*.md")):
        cells = [c.source for c in jupytext.read(path).cells if c.cell_type == "code"]
        code = "\n".join("\n".join(line for line in cell.splitlines() if not line.lstrip().startswith(("%", "!")))
                         for cell in cells)
        yield path.relative_to(PROJECT_ROOT), code
    for path in sorted((PROJECT_ROOT / "src" / "stagewise").rglob("*.py")):
        yield path.relative_to(PROJECT_ROOT), path.read_text()


def test_no_chapter_has_a_forbidden_control():
    found = [v for where, code in _sources() for v in violations(code, str(where))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("planted", [
    "run.check_below('x', e, 0.1, control=('untrained', 1.0))",
    "run.check_below('x', e, 0.1, control=1.0)",
    "run.check_below('x', e, 0.1, control=make_it(1.0))",
    "run.check_true('x', ok, control=run.control('wrong', lambda: 1.0))",
    "run.check_true('x', ok, control=run.control('wrong', float, 1.0))",
    "run.check_below('x', e, 0.1, control=run.control('taken as 1/2', measure, 0.5, 3))",
    "run.check_true('x', ok, control=run.control('largest first', order_ok, list(reversed(order))))",
    "run.check_true('x', ok, control=run.control('largest first', order_ok, order[::-1]))",
    "run.check_true('x', ok, control=run.control('bracket', is_exact, lo == hi))",
])
def test_the_scan_finds_each_forbidden_pattern(planted):
    """Control of the scan: every forbidden pattern, planted in a cell, is found."""
    assert violations(planted, "planted"), planted


def test_the_scan_accepts_computed_controls():
    ok = ("run.check_below('x', e, 0.1, statement='thm', control=run.control('half the steps', train_error, data, "
          "steps // 2))\nrun.check_true('y', ok, statement='thm', control=run.no_control('no wrong hypothesis'))\n"
          "run.check_below('z', e, 0.1, control=untrained_control)")
    assert violations(ok, "ok") == []
