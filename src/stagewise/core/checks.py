"""Checks of a theorem against a run, each with the control it would catch, and the checks table.

A *theorem check* compares a measured quantity with what the theorem predicts. It is evidence
only if it could have failed: a **control** is a meaningful wrong hypothesis or broken
experiment (the theory with a wrong exponent, an untrained network, a shuffled order, half the
steps) put through the *same* criterion, which must reject it. A *sanity* row (an algebraic
identity, a rounding-level consistency) is shown apart and is not counted as evidence.

In ``results.json`` a check is ``{name, value, tolerance, passed, status, detail, kind}`` plus, when it
has one, ``control: {what, value, failed}``.

Verdicts (``status``): ``pass`` and ``fail`` (``passed`` true or false); ``not run`` (``passed`` null), when
the user's parameters break a hypothesis of the theorem the row tests: the run names the hypothesis and the
measured quantity in ``reason`` (see :meth:`stagewise.core.session.Run.hypothesis`), and a run with such rows
still exits 0; ``not reproduced at this budget`` (``passed`` null), for an *empirical* claim (``kind:
empirical``: what a paper reports from experiments, not a theorem) that this run's budget does not show.
Only ``fail`` is a failure; sanity failures are reported apart from theorem failures.

In ``results.json`` the empirical rows are listed apart, under ``claims`` (same fields, ``kind: empirical``):
``checks`` holds what a run can pass or fail (theorem and sanity rows, or 'not run'), ``claims`` what a
paper reports from experiments and whether this run reproduces it. The chapter's table shows both.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Callable

from stagewise.numerics.tables import markdown_lines

THEOREM, SANITY, EMPIRICAL = "theorem", "sanity", "empirical"
KINDS = (THEOREM, SANITY, EMPIRICAL)
PASS, FAIL, NOT_RUN, NOT_REPRODUCED = "pass", "fail", "not run", "not reproduced at this budget"


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
    passed: bool | None
    detail: str = ""
    kind: str = THEOREM
    control: Control | None = None
    reason: str = ""          # why there is no verdict (passed None): the hypothesis that fails, measured

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"check kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.passed is None and not self.reason:
            raise ValueError(f"check {self.name!r}: a row without a verdict must say why (reason)")

    @property
    def status(self) -> str:
        if self.passed is None:
            return NOT_REPRODUCED if self.kind == EMPIRICAL else NOT_RUN
        return PASS if self.passed else FAIL

    def as_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "value": self.value, "tolerance": self.tolerance, "passed": self.passed,
               "status": self.status, "detail": self.detail, "kind": self.kind}
        if self.reason:
            out["reason"] = self.reason
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


def failures(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Names of the rows of a results.json ``checks`` list by what they mean for the user:
    ``theorem`` (failed theorem or empirical rows), ``sanity`` (failed consistency rows: a bug of the code),
    ``not_run`` (no verdict, with the reason: a broken hypothesis, or an empirical claim not shown)."""
    out: dict[str, list[str]] = {"theorem": [], "sanity": [], "not_run": []}
    for c in rows:
        if c.get("passed") is None:
            out["not_run"].append(f"{c['name']} ({c.get('status', NOT_RUN)}: {c.get('reason', '')})")
        elif not c["passed"]:
            out["sanity" if c.get("kind") == SANITY else "theorem"].append(c["name"])
    return out


def failed(rows: list[dict[str, Any]]) -> list[str]:
    """Names of the rows that failed (theorem, empirical or sanity); rows without a verdict are not failures."""
    return [c["name"] for c in rows if c.get("passed") is False]


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


def _verdict(c: Check) -> str:
    if c.kind == EMPIRICAL and c.status == PASS:
        return "reproduced"
    return {PASS: "pass", FAIL: "FAIL"}.get(c.status, c.status)


def rows_of(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every row of a results.json: its checks, then its empirical claims."""
    return list(results.get("checks", [])) + list(results.get("claims", []))


def _rows(checks: list[Check]) -> list[list[str]]:
    return [[c.name, "—" if c.value is None else fmt(c.value), "—" if c.tolerance is None else fmt(c.tolerance),
             _verdict(c), _would_catch(c), c.detail + (f" — {c.status}: {c.reason}" if c.reason else "")]
            for c in checks]  # words, not emoji: a machine without an emoji font (a PDF, a server) showed boxes


HEADER = ["check", "measured", "tolerance", "result", "would catch (control)", "what it tests"]


class ChecksTable:
    """The checks table: HTML in the book, Markdown and plain text elsewhere (PDF, terminals)."""

    EMPIRICAL_TITLE = ("Empirical claims (what the paper reports from experiments, not a theorem; a run's budget "
                       "may not show them)")
    SANITY_TITLE = "Sanity rows (consistency of the code, not evidence for the theorem)"

    def __init__(self, checks: list[Check]):
        self.theorem = [c for c in checks if c.kind == THEOREM]
        self.empirical = [c for c in checks if c.kind == EMPIRICAL]
        self.sanity = [c for c in checks if c.kind == SANITY]

    def _repr_html_(self) -> str:
        def td(i: int, x: str) -> str:
            verdict = f" class='stagewise-{x.lower().split()[0]}'" if i == 3 else ""
            return f"<td{verdict}>{html.escape(x)}</td>"

        def body(rows):
            return "".join("<tr>" + "".join(td(i, x) for i, x in enumerate(row)) + "</tr>" for row in rows)
        head = "".join(f"<th>{h}</th>" for h in HEADER)
        parts = [f"<table class='stagewise-checks'><thead><tr>{head}</tr></thead><tbody>{body(_rows(self.theorem))}"]
        for css, title, rows in (("empirical", self.EMPIRICAL_TITLE, self.empirical),
                                 ("sanity", self.SANITY_TITLE, self.sanity)):
            if rows:
                parts.append(f"<tr class='stagewise-{css}'><th colspan='{len(HEADER)}'>{html.escape(title)}</th></tr>"
                             + body(_rows(rows)))
        return "".join(parts) + "</tbody></table>"

    def _repr_markdown_(self) -> str:
        out = markdown_lines(HEADER, _rows(self.theorem))
        for title, rows in ((self.EMPIRICAL_TITLE, self.empirical), (self.SANITY_TITLE, self.sanity)):
            if rows:
                out += ["", title + ":", ""] + markdown_lines(HEADER, _rows(rows))
        return "\n".join(out)

    def __repr__(self) -> str:
        lines = [f"{_verdict(c).upper():<5} {c.name} = {fmt(c.value)} (tolerance {fmt(c.tolerance)})"
                 + (f" [{c.reason}]" if c.reason else "") for c in self.theorem + self.empirical + self.sanity]
        return "\n".join(lines)
