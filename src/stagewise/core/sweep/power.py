"""What a chapter's checks can catch: its catalogue of realistic bugs (:mod:`stagewise.core.checks.catalogue`)
run through the chapter (the mutation matrix).

``stagewise power CHAPTER`` runs the chapter once unmodified (the baseline) and once per bug (``STAGEWISE_BUG=
chapter:name`` in the run's environment; :func:`~stagewise.core.checks.catalogue.apply_from_env` installs it in the
kernel), each an ordinary run on the Dask sweep machinery (:mod:`.engine`: a LocalCluster on every core,
resumable), at the chapter's default parameters, and writes the matrix bug x check: a theorem row *kills* a bug when
it passes in the baseline and fails under the bug. A crash is no kill. A bug that no theorem row kills *survived*:
the chapter must gain a check that kills it. The full matrix is stored in ``book/power/<chapter>.json`` with the
fingerprint of the code the chapter runs (its source, its subpackage, the kernel's part of core/ and numerics/:
``chapter_code_fingerprint``), and the book's appendix ("What the checks can catch",
:mod:`stagewise.core.book.power_page`) is made from it, marked stale when the code has changed since.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from stagewise.core.checks.catalogue import BUG_ENV, MIN_BUGS, Bug, CatalogueError
from stagewise.core.checks.catalogue import catalogue as _catalogue
from stagewise.core.run.registry import CHAPTER_ORDER, PROJECT_ROOT, get_chapter
from stagewise.core.sweep.engine import complete_results
from stagewise.core.sweep.stored import ChapterResults

POWER_DIR = PROJECT_ROOT / "book" / "power"
KILLED, SURVIVED, CRASHED = "killed", "survived", "crashed"


def catalogue(chapter: str) -> list[Bug]:
    """The catalogue of the chapter named ``chapter`` (:func:`stagewise.core.checks.catalogue.catalogue`)."""
    return _catalogue(get_chapter(chapter))


# -- running the catalogue ------------------------------------------------------------------------

BASELINE = "baseline"


def points(chapter: str, bugs: list[Bug], baseline: bool, overrides: dict[str, Any] | None = None
           ) -> list[dict[str, Any]]:
    """Sweep points: the unmodified chapter (when ``baseline``) and one per bug, all at default parameters or, with
    ``overrides``, at those (the CI subset: the chapter's CI atlas point)."""
    from stagewise.core.run.runner import prepare
    overrides = dict(overrides or {})
    _, parameters = prepare(chapter, overrides)
    out = [{"id": BASELINE, "overrides": overrides, "parameters": parameters}] if baseline else []
    out += [{"id": f"bug-{b.name}", "overrides": overrides, "parameters": parameters,
             "environment": {BUG_ENV: f"{chapter}:{b.name}"}} for b in bugs]
    return out


def ci_overrides(chapter: str) -> dict[str, Any]:
    """Where CI runs a chapter's CI bug: the first CI point of its parameter atlas (a small set whose unmodified run
    the nbmake lane judges as an atlas point in the same suite), or the defaults for a chapter without an atlas file."""
    from stagewise.core.sweep import atlas
    if not atlas.atlas_file(chapter).is_file():
        return {}
    return dict(atlas.load(chapter, ci=True)[1][0]["overrides"])


def matrix(chapter: str, bugs: list[Bug], directory: Path, ci: bool, seconds: float,
           messages: dict[str, str] | None = None) -> dict[str, Any]:
    """The bug x check matrix of a power run folder. Without a baseline (``ci``) every theorem row is taken to
    pass unmodified, which the nbmake lane's run of the same point asserts in the same suite."""
    from stagewise.core.checks.rows import rows_of
    base = complete_results(directory / "points" / BASELINE)
    if base is None and not ci:
        raise RuntimeError(f"{chapter}: the unmodified run (baseline) did not complete; see {directory}")
    columns = []
    if base is not None:
        columns = [{"name": r["name"], "kind": r.get("kind", "theorem"), "statement": r.get("statement", ""),
                    "baseline": r.get("status", "pass")} for r in rows_of(base)]
    baseline = {c["name"]: c["baseline"] for c in columns}
    rows = []
    for b in bugs:
        folder = directory / "points" / f"bug-{b.name}"
        results = complete_results(folder)
        row = {"name": b.name, "category": b.category, "target": b.target, "doc": b.doc, "ci": b.ci}
        if results is None:
            row.update(outcome=CRASHED, cells={}, killed_by=[], sanity_failed=[], findings_changed=[], not_run=[],
                       message=(messages or {}).get(f"bug-{b.name}") or "the run did not complete")
            rows.append(row)
            continue
        cells, killed_by, sanity = {}, [], []
        for r in rows_of(results):
            status = r.get("status", "pass")
            was = baseline.get(r["name"], "pass" if ci else "absent")
            if status == "fail" and was == "pass":
                cells[r["name"]] = KILLED
                (sanity if r.get("kind") == "sanity" else killed_by).append(r["name"])
            else:
                cells[r["name"]] = {"pass": SURVIVED}.get(status, status)
            if not ci and r["name"] not in baseline:
                columns.append({"name": r["name"], "kind": r.get("kind", "theorem"),
                                "statement": r.get("statement", ""), "baseline": "absent"})
                baseline[r["name"]] = "absent"
        # a published finding that the bug changes also kills (the run fails --strict with the claim's name), as
        # does an experiment-integrity row that fails: it checks the data, the initialization or the model a bug
        # changes (both reported apart from the theorem rows that kill)
        changed = [c["name"] for c in (results.get("findings") or {}).get("changed", [])]
        for name in changed:
            cells[name] = KILLED
        row.update(outcome=KILLED if killed_by or sanity or changed else SURVIVED, cells=cells, killed_by=killed_by,
                   sanity_failed=sanity, findings_changed=changed,
                   not_run=[n for n, s in cells.items() if s in ("not run",)])
        rows.append(row)
    from stagewise.core.run.provenance import chapter_code_fingerprint, git_state
    return {"chapter": chapter, "ci": ci, "fingerprint": chapter_code_fingerprint(chapter, get_chapter(chapter).source),
            **git_state(), "parameters": "atlas CI point" if ci else "default", "run_seconds": round(seconds, 1),
            "checks": columns, "bugs": rows, "killed": sum(r["outcome"] == KILLED for r in rows), "total": len(rows)}


#: Tests store their matrices elsewhere with this variable.
POWER_DIR_ENV = "STAGEWISE_POWER_DIR"
#: book/power/<chapter>.json
STORED = ChapterResults(POWER_DIR, POWER_DIR_ENV)
power_dir, stored_path, store, stored = STORED.folder, STORED.path, STORED.write, STORED.read


def run(chapters: list[str], out: Path, ci: bool = False, scheduler: str | None = None, workers: int = 0,
        say: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run each chapter's catalogue (only its ``ci`` bug, without a baseline, at the chapter's CI atlas point, when
    ``ci``); the matrices."""
    from stagewise.core.sweep import engine as sweep
    chosen = {}
    for chapter in chapters:
        bugs = catalogue(chapter)
        if not ci and chapter in CHAPTER_ORDER and len(bugs) < MIN_BUGS:
            raise CatalogueError(f"{chapter}: {len(bugs)} bugs in the catalogue, at least {MIN_BUGS} are needed")
        chosen[chapter] = [b for b in bugs if b.ci] if ci else bugs
    ran = sweep.sweep_many([(chapter, {"power": "ci" if ci else "full"},
                             points(chapter, bugs, not ci, ci_overrides(chapter) if ci else None), out / chapter)
                            for chapter, bugs in chosen.items()], scheduler, workers, say)   # one cluster for all
    found = []
    for (chapter, bugs), results in zip(chosen.items(), ran):
        messages = {r.id: r.message for r in results if r.status == "failed"}
        found.append(matrix(chapter, bugs, out / chapter, ci, sum(r.seconds for r in results), messages))
    return found


def other_killers(bug: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """What killed a bug besides the theorem rows, as (kind, names): ``"integrity"`` (the integrity rows that
    failed) and ``"finding"`` (the published findings it changed), each only when non-empty."""
    kinds = (("integrity", bug.get("sanity_failed", [])), ("finding", bug.get("findings_changed", [])))
    return [(kind, names) for kind, names in kinds if names]


def summary(found: dict[str, Any]) -> list[str]:
    lines = [f"{found['chapter']}: {found['killed']} of {found['total']} bugs killed by a theorem or integrity check "
             "or a changed published finding"]
    for b in found["bugs"]:
        if b["outcome"] == KILLED and not b["killed_by"]:
            label = {"integrity": "the integrity row(s)", "finding": "a changed published finding:"}
            lines.append(f"  killed   {b['name']} ({b['category']}): by "
                         + "; ".join(f"{label[k]} {', '.join(names[:3])}" for k, names in other_killers(b)))
        elif b["outcome"] == KILLED:
            lines.append(f"  killed   {b['name']} ({b['category']}): by {', '.join(b['killed_by'][:3])}"
                         + (f" and {len(b['killed_by']) - 3} more" if len(b["killed_by"]) > 3 else ""))
        elif b["outcome"] == CRASHED:
            lines.append(f"  CRASHED  {b['name']} ({b['category']}): {b.get('message', '')} (a crash is no kill)")
        else:
            extra = f"; sanity rows failed: {', '.join(b['sanity_failed'])}" if b["sanity_failed"] else ""
            lines.append(f"  SURVIVED {b['name']} ({b['category']}): every theorem row passes{extra}")
    return lines
