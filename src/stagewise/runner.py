"""Execute a chapter with papermill into a run folder, never clobbering a good run."""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from .chapters import Chapter, get_chapter
from .parameters import resolve
from .provenance import code_fingerprint
from .session import RUN_DIR_ENV

FAILED_MARKER = "FAILED"


class RunFailed(RuntimeError):
    """The notebook raised (or was interrupted); the partial run is kept for diagnosis."""

    def __init__(self, message: str, folder: Path):
        super().__init__(message)
        self.folder = folder


@dataclass
class RunOutcome:
    folder: Path
    results: dict[str, Any]

    @property
    def failed_checks(self) -> list[str]:
        return [c["name"] for c in self.results["checks"] if not c["passed"]]


def default_run_folder(chapter: str, base: Path = Path("runs")) -> Path:
    """``runs/<chapter>/<UTC time>``, made unique so that no earlier run is overwritten."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder, n = base / chapter / stamp, 1
    while folder.exists():
        n += 1
        folder = base / chapter / f"{stamp}-{n}"
    return folder


def prepare(chapter_name: str, overrides: Mapping[str, Any]) -> tuple[Chapter, dict[str, Any]]:
    """Everything that can reject the input, before any compute."""
    chapter = get_chapter(chapter_name)
    parameters = resolve(chapter.parameters, overrides, chapter.name)
    chapter.check_parameters(parameters)
    return chapter, parameters


def _error_summary(err: BaseException) -> str:
    ename = getattr(err, "ename", type(err).__name__)
    evalue = str(getattr(err, "evalue", err)).strip().splitlines()
    return f"{ename}: {evalue[-1] if evalue else ''}".strip()


def execute(chapter: Chapter, parameters: dict[str, Any], folder: Path, progress: bool = False) -> RunOutcome:
    """Run the chapter notebook in a staging folder, then move it into ``folder``.

    On failure or interruption the staging folder becomes ``<folder>.failed-<time>``
    with a FAILED marker and the partial executed notebook; ``folder`` is untouched.
    """
    import papermill

    folder = folder.resolve()
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.with_name(f".{folder.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    notebook_path = staging / f"{chapter.name}.ipynb"
    started = time.time()
    previous_env = os.environ.get(RUN_DIR_ENV)
    os.environ[RUN_DIR_ENV] = str(staging)
    try:
        papermill.execute_notebook(
            chapter.notebook(), str(notebook_path), parameters=parameters, cwd=str(staging),
            kernel_name="python3", progress_bar=progress, log_output=False,
            report_mode=False, request_save_on_cell_execute=True)
        results_path = staging / "results.json"
        if not results_path.exists():
            raise RuntimeError("the notebook finished without writing results.json (missing run.finish()?)")
    except BaseException as err:  # noqa: BLE001 - interruptions must also leave a marked partial run
        failed = folder.with_name(f"{folder.name}.failed-{datetime.now().strftime('%Y%m%d-%H%M%S')}")
        (staging / FAILED_MARKER).write_text(f"{_error_summary(err)}\n")
        results_path = staging / "results.json"
        if results_path.exists():
            results = json.loads(results_path.read_text())
            results["status"] = "failed"
            results_path.write_text(json.dumps(results, indent=2))
        staging.rename(failed)
        raise RunFailed(_error_summary(err), failed) from err
    finally:
        if previous_env is None:
            os.environ.pop(RUN_DIR_ENV, None)
        else:
            os.environ[RUN_DIR_ENV] = previous_env
    results = json.loads(results_path.read_text())
    results["provenance"].update(
        wall_seconds=round(time.time() - started, 2),
        command=" ".join(sys.argv) if sys.argv and sys.argv[0].endswith("stagewise") else "stagewise (library call)",
        code_fingerprint=code_fingerprint(chapter.source))
    results_path.write_text(json.dumps(results, indent=2))
    _replace(folder, staging)
    return RunOutcome(folder, results)


def _replace(folder: Path, staging: Path) -> None:
    """Swap a finished staging folder into place, dropping the run it replaces only at the end."""
    old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
    if folder.exists():
        folder.rename(old)
    staging.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
