"""Stored runs at the paper's scale (``make paper-scale``): runs too long for a build, kept in the repository.

``book/paper-scale.yaml`` lists them: an id, the chapter, its parameters (a ``paper`` preset, or a longer budget
where the CPU cannot reach the paper), a title, what still differs from the paper, the figures the story page
shows and the sentences it quotes (text values the run computed, such as how its verdicts move with the budget).
:func:`run` executes the ones that are missing or stale on the Dask sweep machinery
(:func:`stagewise.core.sweep.engine.sweep_many`, resumable: a complete run folder of the current code is stored, not
run again) into ``runs/paper-scale/<chapter>/points/<id>``, then :func:`store` keeps what the book needs in
``book/paper-scale/<id>/``: ``results.json`` (every row, the values, the provenance with machine and wall time) and
the figures' data sidecars (``figures/*.json`` and ``*.npz``). No image is stored: the book draws the figures from
the sidecars with the chapter's own render functions.

A stored run is **current** while the fingerprint of the code its chapter runs (its code cells, its subpackage, the
kernel's core and numerics, the pins: ``provenance.chapter_fingerprint``) equals today's; otherwise the book shows it
as stale. Storing replaces an earlier stored run only with a complete one whose every check passes.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from stagewise.core.run.registry import PROJECT_ROOT, get_chapter

CONFIG = PROJECT_ROOT / "book" / "paper-scale.yaml"
STORED_DIR = PROJECT_ROOT / "book" / "paper-scale"
RUNS_DIR = PROJECT_ROOT / "runs" / "paper-scale"
#: What a stored run keeps of its run folder (the machine-readable part).
KEPT = ("results.json", "figures/*.json", "figures/*.npz")


class PaperScaleError(ValueError):
    """A paper-scale file or request the command cannot honour (one-line message)."""


@dataclass
class StoredRun:
    id: str
    chapter: str
    title: str
    parameters: dict[str, Any]
    differs: str
    figures: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)   # values of the run (text) its box quotes, e.g. what moves

    @property
    def folder(self) -> Path:
        return STORED_DIR / self.id


def load(path: Path = CONFIG) -> list[StoredRun]:
    """The stored runs of ``book/paper-scale.yaml``, each validated as the run command validates its parameters."""
    from stagewise.core.run.parameters import ParameterError
    from stagewise.core.run.runner import prepare
    entries = (yaml.safe_load(path.read_text()) or {}).get("runs", []) if path.is_file() else []
    found = []
    for entry in entries:
        missing = {"id", "chapter", "title", "parameters", "differs"} - set(entry)
        if missing:
            raise PaperScaleError(f"{path.name}: run {entry.get('id')!r} lacks {', '.join(sorted(missing))}")
        try:
            prepare(entry["chapter"], dict(entry["parameters"]))
        except (ParameterError, KeyError) as err:
            raise PaperScaleError(f"{path.name}: run {entry['id']!r}: {err}") from None
        found.append(StoredRun(entry["id"], entry["chapter"], " ".join(entry["title"].split()),
                               dict(entry["parameters"]), " ".join(entry["differs"].split()),
                               list(entry.get("figures", [])), list(entry.get("sentences", []))))
    ids = [r.id for r in found]
    if len(set(ids)) != len(ids):
        raise PaperScaleError(f"{path.name}: run ids repeat: {ids}")
    return found


def for_chapter(chapter: str) -> list[StoredRun]:
    return [r for r in load() if r.chapter == chapter]


def current_fingerprint(chapter: str) -> str:
    from stagewise.core.run.provenance import chapter_code_fingerprint
    return chapter_code_fingerprint(chapter, get_chapter(chapter).source)


def results_of(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def failed_rows(results: dict[str, Any]) -> list[str]:
    """Rows of a run that fail (a theorem or integrity row), or a run that is not complete."""
    if results.get("status") != "complete":
        return [f"the run is {results.get('status')!r}, not complete"]
    return [c["name"] for c in results.get("checks", []) if c.get("passed") is False]


def state(run: StoredRun) -> str:
    """``missing``, ``current`` or ``stale`` (stored on other code, or at other parameters than the file's)."""
    results = results_of(run.folder)
    if results is None:
        return "missing"
    return "current" if _agrees(run, results) else "stale"


def _agrees(run: StoredRun, results: dict[str, Any]) -> bool:
    """``results`` came from the current code of ``run``'s chapter, at ``run``'s parameters."""
    return (results.get("provenance", {}).get("chapter_fingerprint") == current_fingerprint(run.chapter)
            and all(results.get("parameters", {}).get(k) == v for k, v in run.parameters.items()))


def _usable(run: StoredRun, folder: Path) -> bool:
    """A complete run folder of ``run``'s parameters on the current code, every check passing."""
    results = results_of(folder)
    return results is not None and not failed_rows(results) and _agrees(run, results)


def store(run: StoredRun, folder: Path) -> Path:
    """Keep the machine-readable part of the run folder ``folder`` as ``book/paper-scale/<id>/``: written beside,
    then swapped in, so that a failure leaves the earlier stored run as it was. Refuses a run with a failed check."""
    results = results_of(folder)
    if results is None:
        raise PaperScaleError(f"{folder}: no results.json")
    bad = failed_rows(results)
    if bad:
        raise PaperScaleError(f"{run.id}: not stored, {len(bad)} failed: {bad[0]}")
    STORED_DIR.mkdir(parents=True, exist_ok=True)
    fresh, old = STORED_DIR / f".{run.id}.new", STORED_DIR / f".{run.id}.old"
    for leftover in (fresh, old):
        shutil.rmtree(leftover, ignore_errors=True)
    for pattern in KEPT:
        for path in sorted(folder.glob(pattern)):
            target = fresh / path.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    if run.folder.exists():
        run.folder.rename(old)
    fresh.rename(run.folder)
    shutil.rmtree(old, ignore_errors=True)
    return run.folder


def run(ids: list[str] | None = None, scheduler: str | None = None, workers: int = 0,
        say: Callable[[str], None] = print) -> dict[str, str]:
    """Run and store every listed run (or ``ids``) that is missing or stale; returns id -> what happened."""
    from stagewise.core.sweep import engine
    runs = load()
    unknown = set(ids or ()) - {r.id for r in runs}
    if unknown:
        raise PaperScaleError(f"no stored run {', '.join(sorted(unknown))} in {CONFIG.name} "
                              f"(runs: {', '.join(r.id for r in runs)})")
    chosen = [r for r in runs if not ids or r.id in ids]
    outcome: dict[str, str] = {}
    todo = []
    for r in chosen:
        if state(r) == "current":
            outcome[r.id] = "current, kept"
        elif _usable(r, RUNS_DIR / r.chapter / "points" / r.id):
            store(r, RUNS_DIR / r.chapter / "points" / r.id)
            outcome[r.id] = "stored (the run folder was already complete)"
        else:
            todo.append(r)
    by_chapter: dict[str, list[StoredRun]] = {}
    for r in todo:
        by_chapter.setdefault(r.chapter, []).append(r)
    parts = [(chapter, {"paper-scale": CONFIG.name},
              [{"id": r.id, "parameters": r.parameters, "overrides": r.parameters} for r in mine], RUNS_DIR / chapter)
             for chapter, mine in by_chapter.items()]
    if parts:
        engine.sweep_many(parts, scheduler, workers, say)
    for r in todo:
        folder = RUNS_DIR / r.chapter / "points" / r.id
        results = results_of(folder)
        if results is None:
            outcome[r.id] = "failed: no results.json (see the run folder)"
        elif failed_rows(results):
            outcome[r.id] = f"not stored: {failed_rows(results)[0]}"
        else:
            store(r, folder)
            outcome[r.id] = "ran and stored"
    return outcome
