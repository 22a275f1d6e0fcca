"""The parameter atlas: every chapter rerun at non-default parameters, as a researcher would, on Dask.

``tests/atlas/<chapter>.yaml`` is a sweep grid (see :mod:`.grid`): at least eight parameter sets spread
over the allowed ranges, and ``ci: [i, ...]``, the points the CI subset runs (with the exercise marked ``ci``, at
least two parameter sets per chapter: the cheapest, so that CI stays fast). ``stagewise atlas`` runs them
with :func:`stagewise.core.sweep.engine.sweep_many` (every chapter's points on one cluster: an embedded
LocalCluster on every core, or ``--scheduler``; resumable: points complete with the current code are skipped)
and passes only when every run exits 0
and every row of every checks table is ``pass``, or has no verdict (``not run``: a hypothesis of the
theorem fails for those parameters; ``not reproduced at this budget``: an empirical claim) *with a reason*.
A failed theorem or sanity row, a crash or a row without a verdict and without a reason fails the atlas.

**Exercises.** The ``exercises:`` list of an atlas file holds the story page's exercises that rerun the chapter,
each with the outcome its answer states, so that no answer in the book is untested::

    exercises:
      - id: ex-halve-eta                     # unique in the file
        title: "Halve the step sizes"        # the exercise's title on the page
        parameters: {etas: [0.02, 0.01]}     # overrides, validated like a run
        expect:                              # each must hold in the run's results.json
          - {row: "<row name>", status: "not reproduced at this budget"}   # pass, fail, not run, reproduced, ...
          - {value: "<key of values>", above: 0.5, below: 2.0}             # strict bounds, either or both
        ci: true                             # the one exercise CI runs (exactly one per file)

An exercise point is judged like any atlas point, except that a row it expects to ``fail`` may fail, and every
expectation must hold (:func:`expectation_problems`). ``stagewise atlas`` runs the exercises with the points;
``--ci`` runs the one marked ``ci``.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from stagewise.core.run.parameters import ParameterError
from stagewise.core.run.registry import PROJECT_ROOT, all_chapters

#: Another folder of atlas files (the tests use one for the smoke-test chapter).
ATLAS_DIR_ENV = "STAGEWISE_ATLAS_DIR"
MIN_SETS = 8
MIN_CI_SETS = 2


@dataclass
class PointVerdict:
    chapter: str
    id: str
    overrides: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    checks: int = 0
    seconds: float = 0.0


def atlas_dir() -> Path:
    return Path(os.environ.get(ATLAS_DIR_ENV) or PROJECT_ROOT / "tests" / "atlas")


def atlas_file(chapter: str) -> Path:
    return atlas_dir() / f"{chapter}.yaml"


def load(chapter: str, ci: bool = False) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The chapter's atlas grid and its validated points (only the ``ci`` points with ``ci=True``);
    a :class:`ParameterError` when the file is missing, too small or its ``ci`` indices are wrong."""
    from stagewise.core.sweep import grid as grids
    path = atlas_file(chapter)
    if not path.is_file():
        raise ParameterError(f"{chapter}: no atlas file {path}")
    grid, points = grids.load(chapter, str(path))
    if len(points) < MIN_SETS:
        raise ParameterError(f"{path.name}: {len(points)} parameter sets, the atlas needs at least {MIN_SETS}")
    chosen = grid.get("ci", [])
    ci_exercise = any(isinstance(e, dict) and e.get("ci") is True for e in grid.get("exercises") or [])
    needed = max(1, MIN_CI_SETS - ci_exercise)     # the exercise marked ci is one of the CI's parameter sets
    if (not isinstance(chosen, list) or len(set(chosen)) < needed
            or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(points) for i in chosen)):
        raise ParameterError(f"{path.name}: ci must list at least {needed} distinct point indices in "
                             f"[0, {len(points) - 1}]" + (" (with the exercise marked ci, two sets)" if ci_exercise
                                                          else "") + f", got {chosen!r}")
    if ci:
        points = [points[i] for i in sorted(set(chosen))]
    return grid, points


STATUSES = ("pass", "fail", "not run", "not reproduced at this budget", "reproduced")


def _exercise_error(path: Path, i: int, what: str) -> ParameterError:
    return ParameterError(f"{path.name}: exercise {i}: {what}")


def exercises(chapter: str, ci: bool = False) -> list[dict[str, Any]]:
    """The validated exercises of the chapter's atlas file: points (``id``, ``overrides``, ``parameters``) with
    ``title``, ``expect`` and ``ci``; only the one marked ``ci`` with ``ci=True``. A :class:`ParameterError` naming
    the exercise when one is malformed."""
    from stagewise.core.run.parameters import load_parameter_file
    from stagewise.core.sweep import grid as grids
    path = atlas_file(chapter)
    if not path.is_file():
        return []
    listed = (load_parameter_file(str(path)) or {}).get("exercises", [])
    if not isinstance(listed, list):
        raise ParameterError(f"{path.name}: exercises must be a list")
    out, ids = [], set()
    for i, ex in enumerate(listed):
        if not isinstance(ex, dict) or set(ex) - {"id", "title", "parameters", "expect", "ci"}:
            raise _exercise_error(path, i, "must be a mapping of id, title, parameters, expect, ci")
        if not isinstance(ex.get("id"), str) or ex["id"] in ids or not str(ex.get("title", "")).strip():
            raise _exercise_error(path, i, "needs a unique string id and a title")
        ids.add(ex["id"])
        overrides = ex.get("parameters") or {}
        if not isinstance(overrides, dict):
            raise _exercise_error(path, i, "parameters must be a mapping NAME: VALUE")
        try:
            parameters = grids.validated(chapter, overrides)
        except ParameterError as err:
            raise _exercise_error(path, i, str(err)) from None
        expect = ex.get("expect")
        if not isinstance(expect, list) or not expect:
            raise _exercise_error(path, i, "expect must list at least one outcome")
        for e in expect:
            ok = isinstance(e, dict) and (
                (set(e) == {"row", "status"} and e["status"] in STATUSES)
                or ("value" in e and set(e) - {"value"} and set(e) <= {"value", "above", "below"}
                    and all(isinstance(e[k], (int, float)) and not isinstance(e[k], bool)
                            for k in set(e) - {"value"})))
            if not ok:
                raise _exercise_error(path, i, f"an expectation must be {{row, status}} with status one of "
                                               f"{', '.join(STATUSES)}, or {{value, above and/or below}}: {e!r}")
        out.append({"id": ex["id"], "title": str(ex["title"]), "overrides": overrides, "parameters": parameters,
                    "expect": expect, "ci": ex.get("ci") is True})
    if out and sum(e["ci"] for e in out) != 1:
        raise ParameterError(f"{path.name}: exactly one exercise must be marked ci: true")
    return [e for e in out if e["ci"]] if ci else out


def expectation_problems(results: dict[str, Any], expect: list[dict[str, Any]]) -> list[str]:
    """What an exercise's run does not show of the outcome its answer states (empty: the answer holds)."""
    from stagewise.core.checks.rows import rows_of
    rows = {r["name"]: r for r in rows_of(results)}
    problems = []
    for e in expect:
        if "row" in e:
            row = rows.get(e["row"])
            if row is None:
                problems.append(f"exercise expects row {e['row']!r}, which the run does not have")
                continue
            status = "reproduced" if row.get("kind") == "empirical" and row.get("status") == "pass" else row.get("status")
            if status != e["status"]:
                problems.append(f"exercise expects {e['row']!r} {e['status']!r}, the run gives {status!r}")
            continue
        value = (results.get("values") or {}).get(e["value"])
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            problems.append(f"exercise expects a number {e['value']!r}, the run gives {value!r}")
            continue
        if "above" in e and not value > e["above"]:
            problems.append(f"exercise expects {e['value']} > {e['above']}, the run gives {value:.4g}")
        if "below" in e and not value < e["below"]:
            problems.append(f"exercise expects {e['value']} < {e['below']}, the run gives {value:.4g}")
    return problems


def judge(chapter: str, point: dict[str, Any], folder: Path, status: str, message: str) -> PointVerdict:
    """What the atlas requires of one point's run folder (an exercise's: also its expected outcome)."""
    verdict = PointVerdict(chapter, point["id"], point["overrides"])
    if status == "failed":
        verdict.problems.append(f"the run failed: {message}")
        return verdict
    try:
        results = json.loads((folder / "results.json").read_text())
    except (OSError, ValueError) as err:
        verdict.problems.append(f"no readable results.json ({err})")
        return verdict
    from stagewise.core.checks.rows import rows_of
    rows = rows_of(results)
    verdict.checks = len(rows)
    verdict.seconds = float(results.get("provenance", {}).get("wall_seconds", 0.0))
    if results.get("status") != "complete":
        verdict.problems.append(f"results.json status {results.get('status')!r}")
    if not verdict.checks:
        verdict.problems.append("no checks")
    expected_failures = {e["row"] for e in point.get("expect", []) if e.get("status") == "fail"}
    for c in rows:
        if c.get("passed") is True or c["name"] in expected_failures:
            continue
        if c.get("passed") is None:
            if str(c.get("reason", "")).strip():
                verdict.not_run.append(f"{c['name']}: {c['reason']}")
            else:
                verdict.problems.append(f"{c['name']}: no verdict and no reason")
        else:
            kind = "sanity row" if c.get("kind") == "sanity" else "theorem check"
            verdict.problems.append(f"{kind} FAILED: {c['name']} = {c.get('value')} (tolerance {c.get('tolerance')})")
    if point.get("expect"):
        verdict.problems += expectation_problems(results, point["expect"])
    return verdict


def run(chapters: list[str], out: Path, ci: bool = False, scheduler: str | None = None, workers: int = 0,
        say: Callable[[str], None] = print, points: bool = True) -> list[PointVerdict]:
    """Run the atlas of each chapter (every point validated first, for all chapters, before anything runs);
    ``points=False``: only its exercises."""
    from stagewise.core.sweep import engine as sweep
    loaded = {c: load(c, ci) for c in chapters}
    if not points:
        loaded = {c: (grid, []) for c, (grid, _) in loaded.items()}
    for c in chapters:   # the exercises run as points of their own (validated before anything runs)
        loaded[c][1].extend(ex for ex in exercises(c, ci) if ex["id"] not in {p["id"] for p in loaded[c][1]})
    verdicts = []
    ran = sweep.sweep_many([(chapter, grid, points, out / chapter) for chapter, (grid, points) in loaded.items()],
                           scheduler, workers, say)                      # every chapter's points on one cluster
    for (chapter, (grid, points)), results in zip(loaded.items(), ran):
        by_id = {r.id: r for r in results}
        for p in points:
            r = by_id[p["id"]]
            verdicts.append(judge(chapter, p, out / chapter / "points" / p["id"], r.status, r.message))
    return verdicts


def summary(verdicts: list[PointVerdict]) -> list[str]:
    """One line per point, then one per problem: what a user reads at the end of ``make atlas``."""
    lines = []
    for v in verdicts:
        shown = ", ".join(f"{k}={json.dumps(x, default=str)}" for k, x in v.overrides.items())
        state = "ok" if not v.problems else "PROBLEM"
        extra = f", {len(v.not_run)} not run" if v.not_run else ""
        lines.append(f"{state:7s} {v.chapter} {v.id} ({v.checks} checks{extra}, {v.seconds:.0f} s): {shown}")
        lines += [f"          {p}" for p in v.problems]
        lines += [f"          not run: {n}" for n in v.not_run]
    return lines


def chapters_with_atlas() -> list[str]:
    return [c.name for c in all_chapters() if atlas_file(c.name).is_file()]

