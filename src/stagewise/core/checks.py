"""Checks of a theorem against a run, each with the control it would catch, and the checks table.

A *theorem check* compares a measured quantity with what the theorem predicts. It is evidence
only if it could have failed: a **control** is a meaningful wrong hypothesis or broken
experiment (the theory with a wrong exponent, an untrained network, a shuffled order, half the
steps) put through the *same* criterion, which must reject it. A *sanity* row (an algebraic
identity, a rounding-level consistency) is shown apart and is not counted as evidence.

In ``results.json`` a check is ``{name, value, tolerance, passed, detail, kind}`` plus, when it
has one, ``control: {what, value, failed}``.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Callable

from stagewise.numerics.tables import markdown_lines

THEOREM, SANITY = "theorem", "sanity"


@dataclass
class Control:
    """What a check would catch: the wrong hypothesis, its value under the check's measure,
    and whether the check's own criterion rejected it (it must)."""

    what: str
    value: Any
    failed: bool


@dataclass
class Check:
    name: str
    value: Any
    tolerance: Any
    passed: bool
    detail: str = ""
    kind: str = THEOREM
    control: Control | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "value": self.value, "tolerance": self.tolerance, "passed": self.passed,
               "detail": self.detail, "kind": self.kind}
        if self.control is not None:
            out["control"] = {"what": self.control.what, "value": self.control.value, "failed": self.control.failed}
        return out


def below(tolerance: float) -> Callable[[Any], bool]:
    return lambda v: math.isfinite(float(v)) and float(v) <= tolerance


def between(low: float, high: float) -> Callable[[Any], bool]:
    return lambda v: math.isfinite(float(v)) and low <= float(v) <= high


def truthy(v: Any) -> bool:
    return bool(v)


def make_control(control: Any, criterion: Callable[[Any], bool] | None, plain: Callable[[Any], Any]) -> Control | None:
    """A Control from ``(what, value)`` (judged by ``criterion``), ``(what, value, passed)`` or a Control."""
    if control is None or isinstance(control, Control):
        return control
    if not isinstance(control, tuple) or len(control) not in (2, 3) or not isinstance(control[0], str):
        raise TypeError("control must be (what, value), (what, value, passed) or a Control")
    what, value = control[0], plain(control[1])
    if len(control) == 2 and criterion is None:
        raise TypeError("run.check needs control=(what, value, passed): it has no criterion of its own")
    passed = bool(control[2]) if len(control) == 3 else _safe(criterion, value)
    return Control(what, value, not passed)


def _safe(criterion: Callable[[Any], bool], value: Any) -> bool:
    try:
        return bool(criterion(value))
    except (TypeError, ValueError):
        return False


# -- the table ------------------------------------------------------------------------------

def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    return str(value)


def _would_catch(c: Check) -> str:
    if c.control is None:
        return "—"
    verdict = "rejected" if c.control.failed else "NOT rejected"
    return f"{c.control.what}: {fmt(c.control.value)} ({verdict})"


def _rows(checks: list[Check]) -> list[list[str]]:
    return [[c.name, fmt(c.value), fmt(c.tolerance), "pass" if c.passed else "FAIL", _would_catch(c), c.detail]
            for c in checks]  # words, not emoji: a machine without an emoji font (a PDF, a server) showed boxes


HEADER = ["check", "measured", "tolerance", "result", "would catch (control)", "what it tests"]


class ChecksTable:
    """The checks table: HTML in the book, Markdown and plain text elsewhere (PDF, terminals)."""

    def __init__(self, checks: list[Check]):
        self.theorem = [c for c in checks if c.kind != SANITY]
        self.sanity = [c for c in checks if c.kind == SANITY]

    def _repr_html_(self) -> str:
        def td(i: int, x: str) -> str:
            verdict = f" class='stagewise-{x.lower()}'" if i == 3 else ""
            return f"<td{verdict}>{html.escape(x)}</td>"

        def body(rows):
            return "".join("<tr>" + "".join(td(i, x) for i, x in enumerate(row)) + "</tr>" for row in rows)
        head = "".join(f"<th>{h}</th>" for h in HEADER)
        parts = [f"<table class='stagewise-checks'><thead><tr>{head}</tr></thead><tbody>{body(_rows(self.theorem))}"]
        if self.sanity:
            parts.append(f"<tr class='stagewise-sanity'><th colspan='{len(HEADER)}'>Sanity rows (consistency of "
                         "the code, not evidence for the theorem)</th></tr>" + body(_rows(self.sanity)))
        return "".join(parts) + "</tbody></table>"

    def _repr_markdown_(self) -> str:
        out = markdown_lines(HEADER, _rows(self.theorem))
        if self.sanity:
            out += ["", "Sanity rows (consistency of the code, not evidence for the theorem):", ""]
            out += markdown_lines(HEADER, _rows(self.sanity))
        return "\n".join(out)

    def __repr__(self) -> str:
        lines = [f"{'PASS' if c.passed else 'FAIL'}  {c.name} = {fmt(c.value)} (tolerance {fmt(c.tolerance)})"
                 for c in self.theorem + self.sanity]
        return "\n".join(lines)
