"""What a chapter's checks can catch: its catalogue of realistic bugs, run through the chapter (the mutation matrix).

Each chapter package has a module ``bugs`` with ``BUGS``, a list of :class:`Bug`: a package function of the
chapter's *experiment* or *measurement* code (the training loop, the initialization, the solver, the measure)
replaced by a deliberately broken version, written as a plausible slip (a wrong constant or exponent, a sign
error, an off-by-one step, the wrong initialization scale, fewer steps than stated, training on a subset, a
solver tolerance 1000x looser, the initial weights in place of the final ones, two arguments swapped). The
replacement's docstring says what the bug is and why it is plausible; it receives the original function as
the keyword ``original``.

``stagewise power CHAPTER`` runs the chapter once unmodified (the baseline) and once per bug (``STAGEWISE_BUG=
chapter:name`` in the run's environment; :func:`apply_from_env` installs it in the kernel), each an ordinary
run on the Dask sweep machinery (:mod:`.sweep`: a LocalCluster on every core, resumable), at the chapter's
default parameters, and writes the matrix bug x check: a theorem row *kills* a bug when it passes in the
baseline and fails under the bug. A crash is no kill. A bug that no theorem row kills *survived*: the chapter
must gain a check that kills it. The full matrix is stored in ``book/power/<chapter>.json`` with the fingerprint
of the code the chapter runs (its source, its subpackage, core/ and numerics/: ``chapter_code_fingerprint``), and the book's appendix ("What the checks can catch", :mod:`.power_page`) is made from it,
marked stale when the code has changed since.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from stagewise.core.registry import CHAPTER_ORDER, PROJECT_ROOT, get_chapter

BUG_ENV = "STAGEWISE_BUG"
POWER_DIR = PROJECT_ROOT / "book" / "power"
#: What kind of slip a bug is (the issue's catalogue of realistic bugs, and two more).
CATEGORIES = ("wrong constant or exponent", "sign error", "off-by-one", "wrong initialization scale", "fewer steps",
              "training on a subset", "looser solver", "initial weights for final", "swapped arguments",
              "wrong measure", "wrong data")
MIN_BUGS = 8
KILLED, SURVIVED, CRASHED = "killed", "survived", "crashed"


class CatalogueError(ValueError):
    pass


@dataclass(frozen=True)
class Bug:
    """One realistic bug: ``target`` (``package.module:function``) is replaced by ``replacement``."""

    name: str
    target: str
    replacement: Callable[..., Any]
    category: str
    ci: bool = False            # the bug the test suite runs (one per chapter)

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.replacement) or ""

    def install(self) -> None:
        module_name, _, attr = self.target.partition(":")
        module = importlib.import_module(module_name)
        original = getattr(module, attr)
        replacement = self.replacement
        if "original" in inspect.signature(replacement).parameters:
            replacement = functools.partial(replacement, original=original)
            functools.update_wrapper(replacement, self.replacement)
        setattr(module, attr, replacement)


def package_of(chapter: str) -> str:
    return "stagewise." + chapter.replace("-", "_")


def _catalogue_module(chapter: str):
    """``stagewise.<package>.bugs``, or the file named in the chapter's front matter (``bugs: path.py``, relative
    to the chapter: the tests' smoke-test chapter has no package)."""
    spec = get_chapter(chapter)
    named = spec.front_matter.get("bugs")
    if named:
        path = (spec.source.parent / named).resolve()
        loader = importlib.util.spec_from_file_location(f"stagewise_bugs_{chapter.replace('-', '_')}", path)
        if loader is None or loader.loader is None or not path.is_file():
            raise CatalogueError(f"{chapter}: bug catalogue {path} not found")
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(package_of(chapter) + ".bugs")
    except ModuleNotFoundError as err:
        raise CatalogueError(f"{chapter}: no bug catalogue ({package_of(chapter)}.bugs): {err}") from None


def catalogue(chapter: str) -> list[Bug]:
    """The chapter's bugs (``stagewise.<package>.bugs.BUGS``), checked: unique names, a docstring each, a known
    category, a target that exists, exactly one marked ``ci``."""
    module = _catalogue_module(chapter)
    bugs = list(getattr(module, "BUGS", []))
    names = [b.name for b in bugs]
    if len(set(names)) != len(names):
        raise CatalogueError(f"{chapter}: bug names repeat: {names}")
    for b in bugs:
        if not b.doc or len(b.doc) < 40:
            raise CatalogueError(f"{chapter}: bug {b.name} needs a docstring saying what it is and why it is plausible")
        if b.category not in CATEGORIES:
            raise CatalogueError(f"{chapter}: bug {b.name}: category {b.category!r} is not one of {CATEGORIES}")
        module_name, _, attr = b.target.partition(":")
        if not hasattr(importlib.import_module(module_name), attr):
            raise CatalogueError(f"{chapter}: bug {b.name}: {b.target} does not exist")
    if sum(b.ci for b in bugs) != 1:
        raise CatalogueError(f"{chapter}: exactly one bug must be marked ci=True, found {sum(b.ci for b in bugs)}")
    return bugs


def apply_from_env() -> str | None:
    """In a chapter's kernel: install the bug named in ``STAGEWISE_BUG`` (``chapter:name``); None without one."""
    value = os.environ.get(BUG_ENV, "").strip()
    if not value:
        return None
    chapter, _, name = value.partition(":")
    found = {b.name: b for b in catalogue(chapter)}
    if name not in found:
        raise CatalogueError(f"{BUG_ENV}={value}: {chapter} has no bug {name!r} (bugs: {', '.join(found)})")
    found[name].install()
    return value


# -- running the catalogue ------------------------------------------------------------------------

BASELINE = "baseline"


def points(chapter: str, bugs: list[Bug], baseline: bool) -> list[dict[str, Any]]:
    """Sweep points: the unmodified chapter (when ``baseline``) and one per bug, all at default parameters."""
    from stagewise.core.runner import prepare
    _, defaults = prepare(chapter, {})
    out = [{"id": BASELINE, "overrides": {}, "parameters": defaults}] if baseline else []
    out += [{"id": f"bug-{b.name}", "overrides": {}, "parameters": defaults,
             "environment": {BUG_ENV: f"{chapter}:{b.name}"}} for b in bugs]
    return out


def _results(folder: Path) -> dict[str, Any] | None:
    try:
        results = json.loads((folder / "results.json").read_text())
    except (OSError, ValueError):
        return None
    return results if results.get("status") == "complete" else None


def matrix(chapter: str, bugs: list[Bug], directory: Path, ci: bool, seconds: float,
           messages: dict[str, str] | None = None) -> dict[str, Any]:
    """The bug x check matrix of a power run folder. Without a baseline (``ci``) every theorem row is taken to
    pass unmodified, which the book's strict build asserts."""
    from stagewise.core.checks import rows_of
    base = _results(directory / "points" / BASELINE)
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
        results = _results(folder)
        row = {"name": b.name, "category": b.category, "target": b.target, "doc": b.doc, "ci": b.ci}
        if results is None:
            row.update(outcome=CRASHED, cells={}, killed_by=[], sanity_failed=[], not_run=[],
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
        row.update(outcome=KILLED if killed_by else SURVIVED, cells=cells, killed_by=killed_by,
                   sanity_failed=sanity, not_run=[n for n, s in cells.items() if s in ("not run",)])
        rows.append(row)
    from stagewise.core.provenance import chapter_code_fingerprint, git_state
    return {"chapter": chapter, "ci": ci, "fingerprint": chapter_code_fingerprint(chapter, get_chapter(chapter).source),
            **git_state(), "parameters": "default", "wall_seconds": round(seconds, 1),
            "checks": columns, "bugs": rows, "killed": sum(r["outcome"] == KILLED for r in rows), "total": len(rows)}


#: Tests store their matrices elsewhere with this variable.
POWER_DIR_ENV = "STAGEWISE_POWER_DIR"


def power_dir() -> Path:
    return Path(os.environ.get(POWER_DIR_ENV) or POWER_DIR)


def stored_path(chapter: str) -> Path:
    return power_dir() / f"{chapter}.json"


def store(found: dict[str, Any]) -> Path:
    from stagewise.core.rundir import write_text_atomic
    power_dir().mkdir(parents=True, exist_ok=True)
    path = stored_path(found["chapter"])
    write_text_atomic(path, json.dumps(found, indent=1, default=str) + "\n")
    return path


def run(chapters: list[str], out: Path, ci: bool = False, scheduler: str | None = None, workers: int = 0,
        say: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Run each chapter's catalogue (only its ``ci`` bug, without a baseline, when ``ci``); the matrices."""
    from stagewise.core import sweep
    chosen = {}
    for chapter in chapters:
        bugs = catalogue(chapter)
        if not ci and chapter in CHAPTER_ORDER and len(bugs) < MIN_BUGS:
            raise CatalogueError(f"{chapter}: {len(bugs)} bugs in the catalogue, at least {MIN_BUGS} are needed")
        chosen[chapter] = [b for b in bugs if b.ci] if ci else bugs
    found = []
    for chapter, bugs in chosen.items():
        started = time.time()
        directory = out / chapter
        ran = sweep.sweep(chapter, {"power": "ci" if ci else "full"}, points(chapter, bugs, not ci), directory,
                          scheduler, workers, say)
        messages = {r.id: r.message for r in ran if r.status == "failed"}
        found.append(matrix(chapter, bugs, directory, ci, time.time() - started, messages))
    return found


def summary(found: dict[str, Any]) -> list[str]:
    lines = [f"{found['chapter']}: {found['killed']} of {found['total']} bugs killed by a theorem check"]
    for b in found["bugs"]:
        if b["outcome"] == KILLED:
            lines.append(f"  killed   {b['name']} ({b['category']}): by {', '.join(b['killed_by'][:3])}"
                         + (f" and {len(b['killed_by']) - 3} more" if len(b["killed_by"]) > 3 else ""))
        elif b["outcome"] == CRASHED:
            lines.append(f"  CRASHED  {b['name']} ({b['category']}): {b.get('message', '')} (a crash is no kill)")
        else:
            extra = f"; sanity rows failed: {', '.join(b['sanity_failed'])}" if b["sanity_failed"] else ""
            lines.append(f"  SURVIVED {b['name']} ({b['category']}): every theorem row passes{extra}")
    return lines
