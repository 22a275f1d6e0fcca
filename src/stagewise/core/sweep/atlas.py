"""The parameter atlas: every chapter rerun at non-default parameters, as a researcher would, on Dask.

``tests/atlas/<chapter>.yaml`` is a sweep grid (see :mod:`.grid`): at least eight parameter sets spread
over the allowed ranges, and ``ci: [i, j]``, the points the CI subset runs. ``stagewise atlas`` runs them
with :func:`stagewise.core.sweep.engine.sweep` (an embedded LocalCluster on every core, or ``--scheduler``;
resumable: points complete with the current code are skipped) and passes only when every run exits 0
and every row of every checks table is ``pass``, or has no verdict (``not run``: a hypothesis of the
theorem fails for those parameters; ``not reproduced at this budget``: an empirical claim) *with a reason*.
A failed theorem or sanity row, a crash or a row without a verdict and without a reason fails the atlas.
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
    if (not isinstance(chosen, list) or len(set(chosen)) < MIN_CI_SETS
            or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(points) for i in chosen)):
        raise ParameterError(f"{path.name}: ci must list at least {MIN_CI_SETS} distinct point indices in "
                             f"[0, {len(points) - 1}], got {chosen!r}")
    if ci:
        points = [points[i] for i in sorted(set(chosen))]
    return grid, points


def judge(chapter: str, point: dict[str, Any], folder: Path, status: str, message: str) -> PointVerdict:
    """What the atlas requires of one point's run folder."""
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
    for c in rows:
        if c.get("passed") is True:
            continue
        if c.get("passed") is None:
            if str(c.get("reason", "")).strip():
                verdict.not_run.append(f"{c['name']}: {c['reason']}")
            else:
                verdict.problems.append(f"{c['name']}: no verdict and no reason")
        else:
            kind = "sanity row" if c.get("kind") == "sanity" else "theorem check"
            verdict.problems.append(f"{kind} FAILED: {c['name']} = {c.get('value')} (tolerance {c.get('tolerance')})")
    return verdict


def run(chapters: list[str], out: Path, ci: bool = False, scheduler: str | None = None, workers: int = 0,
        say: Callable[[str], None] = print) -> list[PointVerdict]:
    """Run the atlas of each chapter (every point validated first, for all chapters, before anything runs)."""
    from stagewise.core.sweep import engine as sweep
    loaded = {c: load(c, ci) for c in chapters}
    verdicts = []
    for chapter, (grid, points) in loaded.items():
        directory = out / chapter
        results = sweep.sweep(chapter, grid, points, directory, scheduler, workers, say)
        by_id = {r.id: r for r in results}
        for p in points:
            r = by_id[p["id"]]
            verdicts.append(judge(chapter, p, directory / "points" / p["id"], r.status, r.message))
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

