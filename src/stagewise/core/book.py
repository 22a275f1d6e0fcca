"""Build the book from the run command's own executions.

Each chapter is executed by :func:`stagewise.core.runner.execute` into
``book/executed/<chapter>/`` (the same run folder a user gets), and Sphinx renders
those executed notebooks without executing them again (``execute_notebooks: off``).
A chapter is re-executed when its code fingerprint (chapter source, all of ``src/``,
the pinned requirements) differs from the one recorded in its ``results.json``.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from stagewise.core import faults, leftovers, locks, rundir
from stagewise.core.registry import PROJECT_ROOT, Chapter, all_chapters
from stagewise.core.provenance import code_fingerprint

EXECUTED_DIR = PROJECT_ROOT / "book" / "executed"
BUILD_DIR = PROJECT_ROOT / "_build"
#: Tests point the book's executions elsewhere with this variable.
EXECUTED_DIR_ENV = "STAGEWISE_EXECUTED_DIR"


def executed_dir() -> Path:
    return Path(os.environ.get(EXECUTED_DIR_ENV) or EXECUTED_DIR)


class BuildLock(locks.FolderLock):
    """One book build at a time: a lock on ``book/executed/.build.lock``."""

    def __init__(self):
        folder = executed_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise rundir.OutputRefused(f"cannot create {folder}: {err.strerror}") from None
        super().__init__(folder, what="the book build in", path=folder / ".build.lock")


def report_leftovers() -> list[str]:
    """Mark and report killed chapter executions under the executed folder (build lock held)."""
    lines = []
    for staging in leftovers.find_leftovers([executed_dir()]):
        target = leftovers.target_of(staging)
        try:
            with locks.FolderLock(target):
                if leftovers.mark_killed(staging):
                    lines.append(f"found {staging}, left by an execution that was killed; marked it FAILED "
                                 "('stagewise clean --partial' removes it)")
                else:
                    lines.append(f"{staging} is a killed execution's leftover ('stagewise clean --partial' "
                                 "removes it)")
                lines += leftovers.recover(target)
        except rundir.FolderBusy:
            continue
    return lines


@dataclass
class Plan:
    chapter: Chapter
    reason: str | None  # None: up to date

    @property
    def folder(self) -> Path:
        return executed_dir() / self.chapter.name


def staleness(chapter: Chapter, executed: Path | None = None, root: Path = PROJECT_ROOT) -> str | None:
    """Why ``chapter`` must be executed again, or None when its outputs are current."""
    results_path = (executed or executed_dir()) / chapter.name / "results.json"
    if not results_path.exists():
        return "never executed"
    results = json.loads(results_path.read_text())
    if results.get("status") != "complete":
        return "last execution did not complete"
    if results.get("provenance", {}).get("code_fingerprint") != code_fingerprint(chapter.source, root):
        return "code changed (chapter, src/ or requirements)"
    return None


def plan(chapters: list[Chapter] | None = None, force: bool = False) -> list[Plan]:
    return [Plan(c, "forced" if force else staleness(c)) for c in (chapters or all_chapters())]


def failed_checks(chapter: Chapter) -> list[str]:
    results = json.loads((executed_dir() / chapter.name / "results.json").read_text())
    return [c["name"] for c in results["checks"] if not c["passed"]]


def render_html(strict: bool = True) -> float:
    """Sphinx build of the whole book into ``_build/html``; returns seconds."""
    started = time.time()
    faults.point("before-html")
    command = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(PROJECT_ROOT),
               "--builder", "html", "--keep-going"]
    if strict:
        command += ["-W", "-n"]
    subprocess.run(command, check=True, cwd=PROJECT_ROOT)
    return time.time() - started


def clean() -> None:
    """Remove the HTML build and every chapter execution (``--clean``; build lock held)."""
    shutil.rmtree(BUILD_DIR, ignore_errors=True)
    folder = executed_dir()
    if folder.is_dir():
        for entry in folder.iterdir():
            if entry.name != ".build.lock":
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
