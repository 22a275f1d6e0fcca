"""Checks of a theorem against a run, each with a control computed in the run, and the checks table.

A *theorem check* compares a measured quantity with what the theorem predicts, names the statement it tests
(``statement=``, the label of the chapter's box; the table links it) and says its direction (``≤``, ``≥``,
``in [a, b]``). It is evidence only if it could have failed: its **control** is an *experiment*, the same
measurement applied to a plausible wrong hypothesis or broken run and computed in this run
(``run.control(what, experiment, *args)``: an untrained network, half the steps, the wrong exponent on the same
data, a misaligned dataset), judged by the row's own criterion, which must reject it. What shows nothing is
refused: a number or a tuple given as a control, a lambda or a builtin as the experiment (:func:`measure`), a
control equal to the row's own value or to another row's value (borrowed), a reordering of the row's own list
(:func:`refuse_control`); the scan test ``tests/core/test_control_scan.py`` refuses in the chapters' source what
only the source shows (all-literal arguments, ``reversed``, ``[::-1]``, exact equalities). Where no meaningful
control exists the row says so (``run.no_control(why)``: "control: none") and does not count as powered
(:attr:`Check.powered`; the table's caption counts them). A *sanity* row (an algebraic identity, a deterministic
property of a derived formula, a rounding-level consistency) is shown apart and is not counted as evidence.

In ``results.json`` a check is ``{name, value, tolerance, relation, statement, passed, status, detail, kind}`` plus
``control: {what, value, failed, via}`` (or ``{what: "none", why}``).

Verdicts (``status``): ``pass`` and ``fail`` (``passed`` true or false); ``not run`` (``passed`` null), when
the user's parameters break a hypothesis of the theorem the row tests: the run names the hypothesis and the
measured quantity in ``reason`` (see :meth:`stagewise.core.run.session.Run.hypothesis`), and a run with such rows
still exits 0; ``not reproduced at this budget`` (``passed`` null), for an *empirical* claim (``kind:
empirical``: what a paper reports from experiments, not a theorem) that this run's budget does not show.
Only ``fail`` is a failure; sanity failures are reported apart from theorem failures.

In ``results.json`` the empirical rows are listed apart, under ``claims`` (same fields, ``kind: empirical``):
``checks`` holds what a run can pass or fail (theorem and sanity rows, or 'not run'), ``claims`` what a
paper reports from experiments and whether this run reproduces it. The chapter's table shows both.
"""
from __future__ import annotations

import functools
import html
import math
from dataclasses import dataclass
from typing import Any, Callable

from stagewise.core.checks.tables import markdown_lines

THEOREM, SANITY, EMPIRICAL = "theorem", "sanity", "empirical"
KINDS = (THEOREM, SANITY, EMPIRICAL)
PASS, FAIL, NOT_RUN, NOT_REPRODUCED = "pass", "fail", "not run", "not reproduced at this budget"
#: An empirical claim whose measurement lies on the opposite side of the claim (its interval excludes it).
CONTRADICTED = "contradicted"


#: How a row's measured value must relate to its tolerance; shown in the table's tolerance column.
RELATIONS = {"<=": "≤ {}", ">=": "≥ {}", "in": "in {}", "==": "= {}", "true": "holds"}
#: Functions that cannot be a control's experiment: they turn a literal or the check's own numbers
#: into a "control" (``float(1.0)``, ``list(reversed(x))``) instead of measuring a modified run.
FORBIDDEN_EXPERIMENTS = frozenset({"float", "int", "bool", "list", "tuple", "reversed", "sorted", "abs", "max",
                                   "min", "sum", "len", "round", "str", "dict", "set", "print", "id"})


class ControlError(TypeError):
    """A control that cannot show anything: a literal, another check's value, a reordering, no experiment."""


@dataclass
class Control:
    """What a check would catch: the same measurement run on a plausible wrong hypothesis or broken run,
    computed in this run by ``via`` (see :func:`measure`), and whether the check's own criterion rejected it.
    ``Control.none(why)``: the row has no meaningful control; it says so and does not count as powered."""

    what: str
    value: Any
    failed: bool | None = None      # set when the check judges it
    via: str = ""                   # the function that computed it (module.qualname)
    why_none: str = ""              # for Control.none: why no meaningful control exists
    inputs: tuple = ()              # the experiment's arguments, plain (to tell a borrowed number from a coincidence)

    @classmethod
    def none(cls, why: str) -> "Control":
        if not isinstance(why, str) or not why.strip():
            raise ControlError("Control.none needs the reason why no meaningful control exists")
        return cls("none", None, None, "", why.strip())

    @property
    def is_none(self) -> bool:
        return bool(self.why_none)

    def as_dict(self) -> dict[str, Any]:
        if self.is_none:
            return {"what": "none", "value": None, "failed": None, "why": self.why_none}
        return {"what": self.what, "value": self.value, "failed": self.failed, "via": self.via}


def _qualname(function: Callable) -> str:
    inner = function.func if isinstance(function, functools.partial) else function
    return f"{getattr(inner, '__module__', '?')}.{getattr(inner, '__qualname__', repr(inner))}"


def measure(what: str, experiment: Callable[..., Any], args: tuple, kwargs: dict,
            plain: Callable[[Any], Any]) -> Control:
    """A control computed now: ``experiment(*args, **kwargs)``, a named function applied to a modified run
    or theory (an untrained network, half the steps, the wrong exponent on the same data). Refuses what
    cannot be an experiment: a lambda (``lambda: 1.0``), a builtin (``float``, ``reversed``). (A call whose every
    argument is a literal in the source is refused by the scan test: at run time a parameter is a number too.)"""
    if not isinstance(what, str) or not what.strip():
        raise ControlError("a control needs a description (what wrong hypothesis or broken run it is)")
    if not callable(experiment):
        raise ControlError(f"control {what!r}: the experiment must be a function, got {type(experiment).__name__} "
                           "(a number is not a control: compute it in this run)")
    inner = experiment.func if isinstance(experiment, functools.partial) else experiment
    name = getattr(inner, "__name__", "")
    if name == "<lambda>":
        raise ControlError(f"control {what!r}: a lambda is not an experiment; name the function that measures "
                           "the modified run")
    if getattr(inner, "__module__", None) == "builtins" or name in FORBIDDEN_EXPERIMENTS:
        raise ControlError(f"control {what!r}: {name}() turns numbers into a control; call the measurement on a "
                           "modified run instead")
    inputs = tuple(plain(a) for a in list(args) + list(kwargs.values()) if _numbers_like(a))
    return Control(what.strip(), plain(experiment(*args, **kwargs)), None, _qualname(experiment), "", inputs)


def _numbers_like(a: Any) -> bool:
    return isinstance(a, (int, float, list, tuple)) or type(a).__name__ in ("ndarray", "Tensor", "float64")


def _numbers(value: Any) -> list[float]:
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def _informative(value: Any) -> bool:
    """A value whose exact repetition elsewhere cannot be chance: it holds a non-integer float."""
    return any(math.isfinite(x) and not x.is_integer() for x in _numbers(value))


def refuse_control(control: Control, name: str, value: Any, recorded: list["Check"]) -> None:
    """Raise ControlError for a control that shows nothing because it only passes numbers of the run through:
    its experiment was handed another row's value and returned it (borrowed), was handed the row's own value
    and returned it, or was handed the row's own list and returned it reordered. Two different experiments
    that happen to give the same number (a count, a fraction, the same optimum) are no such thing."""
    if control.is_none:
        return
    handed = [x for x in control.inputs]
    if _informative(control.value) and control.value == value and value in handed:
        raise ControlError(f"check {name!r}: its control {control.what!r} passes the check's own value through")
    for other in recorded:
        if (other.name != name and _informative(control.value) and control.value == other.value
                and other.value in handed):
            raise ControlError(f"check {name!r}: its control {control.what!r} is the value of check "
                               f"{other.name!r}; a control is its own experiment, not a borrowed number")
    if (isinstance(control.value, list) and isinstance(value, list) and len(value) > 1
            and control.value != value and _numbers(control.value)
            and sorted(_numbers(control.value)) == sorted(_numbers(value))
            and any(sorted(_numbers(h)) == sorted(_numbers(value)) for h in handed if isinstance(h, list))):
        raise ControlError(f"check {name!r}: its control {control.what!r} reorders the measured list; if the list "
                           "passes, its reordering fails by construction, which shows nothing")


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
    relation: str = ""        # how value must relate to tolerance (RELATIONS)
    statement: str = ""       # the label of the statement the row tests (a prf label or a (target)=)
    statement_title: str = "" # how the table names it (kind and title, from the chapter source)
    contradicted: bool = False  # an empirical claim without a verdict whose measurement says the opposite

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"check kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.passed is None and not self.reason:
            raise ValueError(f"check {self.name!r}: a row without a verdict must say why (reason)")
        if self.contradicted and (self.kind != EMPIRICAL or self.passed is not None):
            raise ValueError(f"check {self.name!r}: only an empirical claim without a verdict can be contradicted")
        if self.relation and self.relation not in RELATIONS:
            raise ValueError(f"check {self.name!r}: relation must be one of {', '.join(RELATIONS)}, "
                             f"got {self.relation!r}")

    @property
    def status(self) -> str:
        if self.passed is None:
            return CONTRADICTED if self.contradicted else NOT_REPRODUCED if self.kind == EMPIRICAL else NOT_RUN
        return PASS if self.passed else FAIL

    @property
    def powered(self) -> bool:
        """The row could have failed: a computed control that its criterion rejected."""
        return self.control is not None and not self.control.is_none and self.control.failed is True

    def as_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "value": self.value, "tolerance": self.tolerance, "passed": self.passed,
               "status": self.status, "detail": self.detail, "kind": self.kind}
        if self.relation:
            out["relation"] = self.relation
        if self.statement:
            out["statement"] = self.statement
        if self.reason:
            out["reason"] = self.reason
        if self.control is not None:
            out["control"] = self.control.as_dict()
        return out


def below(tolerance: float) -> Callable[[Any], bool]:
    return lambda v: math.isfinite(float(v)) and float(v) <= tolerance


def above(tolerance: float) -> Callable[[Any], bool]:
    return lambda v: math.isfinite(float(v)) and float(v) >= tolerance


def between(low: float, high: float) -> Callable[[Any], bool]:
    return lambda v: math.isfinite(float(v)) and low <= float(v) <= high


def truthy(v: Any) -> bool:
    return bool(v)


def judge_control(control: Any, criterion: Callable[[Any], bool] | None, name: str) -> Control | None:
    """The control of row ``name`` judged by the row's own ``criterion``; refuses anything but a
    :class:`Control` from ``run.control(...)`` or ``run.no_control(why)``."""
    if control is None:
        return None
    if not isinstance(control, Control):
        raise ControlError(f"check {name!r}: control must come from run.control(what, experiment, *args) (the "
                           f"same measurement on a modified run, computed now) or run.no_control(why), "
                           f"not {type(control).__name__}")
    if control.is_none:
        return control
    if criterion is None:
        raise ControlError(f"check {name!r}: give the row's criterion (a function of the value), so that its "
                           "control is judged by the same one")
    return Control(control.what, control.value, not _safe(criterion, control.value), control.via, "", control.inputs)


def verdict(criterion: Callable[[Any], bool] | Any, value: Any, control: Any, name: str,
            row: str = "check") -> tuple[bool, Control | None]:
    """A row's verdict on ``value`` and its control judged by the same criterion, for every kind of row.

    ``criterion`` is a function of the value (which then also judges ``control``), or a verdict computed by the
    chapter (then the row may carry no computed control, only ``run.no_control(why)`` or none): a control judged
    by another rule than the row's would show nothing. ``row`` names the kind of row in the error ("check",
    "claim")."""
    if callable(criterion):
        return _safe(criterion, value), judge_control(control, criterion, name)
    if control is not None and not control.is_none:
        raise ControlError(f"{row} {name!r}: give a criterion (a function of the value) instead of a computed "
                           "verdict, so that the control is judged by the same one")
    return bool(criterion), control


def _safe(criterion: Callable[[Any], bool], value: Any) -> bool:
    try:
        return bool(criterion(value))
    except (TypeError, ValueError):
        return False


def failures(rows: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Names of the rows of a results.json ``checks`` list by what they mean for the user:
    ``theorem`` (failed theorem or empirical rows), ``sanity`` (failed consistency rows: a bug of the code),
    ``not_run`` (no verdict, with the reason: a broken hypothesis, or an empirical claim not shown), ``powerless``
    (rows that pass while their computed control passes the same criterion: the row has lost its power, a failure
    under ``--strict``, reported apart)."""
    out: dict[str, list[str]] = {"theorem": [], "sanity": [], "not_run": [], "powerless": []}
    for c in rows:
        control = c.get("control") or {}
        if c.get("passed") is True and control.get("what") != "none" and control.get("failed") is False:
            out["powerless"].append(f"{c['name']} (control: {control.get('what', '')} = {fmt(control.get('value'))})")
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
    if c.control.is_none:
        return f"control: none ({c.control.why_none})"
    verdict = "rejected" if c.control.failed else "NOT rejected"
    return f"{c.control.what}: {fmt(c.control.value)} ({verdict})"


def _verdict(c: Check) -> str:
    if c.kind == EMPIRICAL and c.status == PASS:
        return "reproduced"
    return {PASS: "pass", FAIL: "FAIL"}.get(c.status, c.status)


def tolerance_text(c: Check) -> str:
    """The tolerance with its direction: ``≤ 0.1``, ``≥ 0.5``, ``in [0.9, 1.1]``, ``holds``."""
    if c.tolerance is None and c.relation != "true":
        return "—"
    if not c.relation:
        return fmt(c.tolerance)
    return RELATIONS[c.relation].format(fmt(c.tolerance))


def rows_of(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every row of a results.json: its checks, then its empirical claims."""
    return list(results.get("checks", [])) + list(results.get("claims", []))


def _rows(checks: list[Check]) -> list[list[str]]:
    return [[c.name, c.statement_title or c.statement or "—", "—" if c.value is None else fmt(c.value),
             tolerance_text(c), _verdict(c), _would_catch(c),
             c.detail + (f" — {c.status}: {c.reason}" if c.reason else "")]
            for c in checks]  # words, not emoji: a machine without an emoji font (a PDF, a server) showed boxes


HEADER = ["check", "statement", "measured", "tolerance", "result", "would catch (control)", "what it tests"]
RESULT_COLUMN, STATEMENT_COLUMN = 4, 1


def power_line(checks: list[Check]) -> str:
    """How many theorem rows could have failed: their control was computed and rejected."""
    theorem = [c for c in checks if c.kind == THEOREM and c.passed is not None]
    powered = sum(c.powered for c in theorem)
    none = sum(c.control is not None and c.control.is_none for c in theorem)
    weak = len(theorem) - powered - none
    return (f"{len(theorem)} theorem rows with a verdict: {powered} with a computed control that the row's "
            f"criterion rejects, {none} with no meaningful control (control: none)"
            + (f", {weak} whose control is NOT rejected" if weak else "") + ".")


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
        def td(i: int, x: str, c: Check) -> str:
            verdict = f" class='stagewise-{x.lower().split()[0]}'" if i == RESULT_COLUMN else ""
            if i == STATEMENT_COLUMN and c.statement:   # the statement's box on the page (sphinx-proof's anchor)
                return f"<td><a class='reference internal' href='#{html.escape(c.statement)}'>{html.escape(x)}</a></td>"
            return f"<td{verdict}>{html.escape(x)}</td>"

        def body(checks):
            return "".join("<tr>" + "".join(td(i, x, c) for i, x in enumerate(row)) + "</tr>"
                           for c, row in zip(checks, _rows(checks)))
        head = "".join(f"<th>{h}</th>" for h in HEADER)
        parts = [f"<table class='stagewise-checks'><caption>{html.escape(power_line(self.theorem))}</caption>"
                 f"<thead><tr>{head}</tr></thead><tbody>{body(self.theorem)}"]
        for css, title, rows in (("empirical", self.EMPIRICAL_TITLE, self.empirical),
                                 ("sanity", self.SANITY_TITLE, self.sanity)):
            if rows:
                parts.append(f"<tr class='stagewise-{css}'><th colspan='{len(HEADER)}'>{html.escape(title)}</th></tr>"
                             + body(rows))
        return "".join(parts) + "</tbody></table>"

    def _repr_markdown_(self) -> str:
        out = [power_line(self.theorem), ""] + markdown_lines(HEADER, _rows(self.theorem))
        for title, rows in ((self.EMPIRICAL_TITLE, self.empirical), (self.SANITY_TITLE, self.sanity)):
            if rows:
                out += ["", title + ":", ""] + markdown_lines(HEADER, _rows(rows))
        return "\n".join(out)

    def __repr__(self) -> str:
        lines = [f"{_verdict(c).upper():<5} {c.name} = {fmt(c.value)} (tolerance {tolerance_text(c)})"
                 + (f" [{c.reason}]" if c.reason else "") for c in self.theorem + self.empirical + self.sanity]
        return "\n".join(lines)
