"""Build the book from the run command's own executions.

Each chapter is executed by :func:`stagewise.runner.execute` into
``book/executed/<chapter>/`` (the same run folder a user gets), and Sphinx renders
those executed notebooks without executing them again (``execute_notebooks: off``).
A chapter is re-executed when its code fingerprint (chapter source, all of ``src/``,
the pinned requirements) differs from the one recorded in its ``results.json``.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .chapters import PROJECT_ROOT, Chapter, all_chapters
from .provenance import code_fingerprint

EXECUTED_DIR = PROJECT_ROOT / "book" / "executed"
BUILD_DIR = PROJECT_ROOT / "_build"


@dataclass
class Plan:
    chapter: Chapter
    reason: str | None  # None: up to date

    @property
    def folder(self) -> Path:
        return EXECUTED_DIR / self.chapter.name


def staleness(chapter: Chapter, executed_dir: Path = EXECUTED_DIR, root: Path = PROJECT_ROOT) -> str | None:
    """Why ``chapter`` must be executed again, or None when its outputs are current."""
    results_path = executed_dir / chapter.name / "results.json"
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
    results = json.loads((EXECUTED_DIR / chapter.name / "results.json").read_text())
    return [c["name"] for c in results["checks"] if not c["passed"]]


def render_html(strict: bool = True) -> float:
    """Sphinx build of the whole book into ``_build/html``; returns seconds."""
    started = time.time()
    command = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(PROJECT_ROOT),
               "--builder", "html", "--keep-going"]
    if strict:
        command += ["-W", "-n"]
    subprocess.run(command, check=True, cwd=PROJECT_ROOT)
    return time.time() - started


def clean() -> None:
    shutil.rmtree(BUILD_DIR, ignore_errors=True)
    shutil.rmtree(EXECUTED_DIR, ignore_errors=True)
