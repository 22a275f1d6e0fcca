"""Execute a chapter with papermill into a run folder, never clobbering a good run or a user's file."""
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

from stagewise.core.run import faults
from stagewise.core.run import leftovers
from stagewise.core.run import locks
from stagewise.core.run import rundir
from stagewise.core.run.registry import EXTRA_CHAPTERS_ENV, Chapter, get_chapter
from stagewise.core.run.parameters import resolve
from stagewise.core.run.provenance import code_fingerprint
from stagewise.core.run.rundir import PROGRESS_TTY_ENV, RUN_DIR_ENV

FAILED_MARKER = rundir.FAILED_MARKER
KERNEL_LOG = "kernel.log"


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
        from stagewise.core.checks.rows import failed, rows_of
        return failed(rows_of(self.results))

    @property
    def failures(self) -> dict[str, list[str]]:
        from stagewise.core.checks.rows import failures, rows_of
        return failures(rows_of(self.results))


def default_run_folder(chapter: str, base: Path = Path("runs")) -> Path:
    """``runs/<chapter>/<UTC time>``, made unique so that no earlier run is overwritten."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder, n = base / chapter / stamp, 1
    while os.path.lexists(folder) or os.path.lexists(rundir.lock_path(folder)):
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
    if isinstance(err, KeyboardInterrupt):
        return "interrupted (Ctrl-C or SIGTERM)"
    ename = getattr(err, "ename", type(err).__name__)
    evalue = str(getattr(err, "evalue", err)).strip().splitlines()
    return f"{ename}: {evalue[-1] if evalue else ''}".strip()


def preflight(chapter: Chapter, folder: Path, option: str = "--out") -> bool:
    """Refuse an output path a run may not use, before any compute (see :mod:`stagewise.rundir`).

    Returns whether the run will replace an earlier run of the same chapter.
    """
    folder = rundir.absolute(folder)
    locks.FolderLock(folder).ensure_free()
    replaces = rundir.check_target(folder, chapter.name, option)
    rundir.writable_parent(folder, option)
    if not os.access(folder.parent, os.W_OK):
        raise rundir.OutputRefused(f"{option} {folder}: {folder.parent} is not writable")
    return replaces


def _kernel_manager_class(socket_dir: str):
    """A kernel manager that talks to the kernel over local IPC sockets, not TCP.

    The sockets live in ``socket_dir``, a private (0700) temporary folder, so the kernel
    is reachable only by this user and starts without jupyter's 'running over TCP
    without encryption' warning.
    """
    from jupyter_client.manager import AsyncKernelManager

    class LocalKernelManager(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.transport = "ipc"
            self.connection_file = os.path.join(socket_dir, "kernel.json")
            self.ip = os.path.join(socket_dir, "ipc")

        async def _async_pre_start_kernel(self, **kw):
            # The kernel process's own log (not the cells' output, which goes into the
            # notebook) is kept out of the terminal; a failed run keeps it as kernel.log.
            kw.setdefault("stderr", open(os.path.join(socket_dir, KERNEL_LOG), "ab"))
            return await super()._async_pre_start_kernel(**kw)

    return LocalKernelManager


def _forget_machine_paths(notebook_path: Path) -> None:
    """Papermill records where it wrote the notebook (``metadata.papermill.output_path``): an absolute path
    of the hidden staging folder, meaningless once the run is installed and a path of this machine in every
    notebook a reader downloads. Keep the file name only."""
    notebook = json.loads(notebook_path.read_text())
    meta = notebook.get("metadata", {}).get("papermill", {})
    for key in ("input_path", "output_path"):
        if isinstance(meta.get(key), str):
            meta[key] = Path(meta[key]).name
    rundir.write_text_atomic(notebook_path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")


def execute(chapter: Chapter, parameters: dict[str, Any], folder: Path, progress: bool = False,
            notes=None) -> RunOutcome:
    """Run the chapter notebook in a staging folder, then move it into ``folder``.

    ``folder`` must be new, empty or an earlier run of the same chapter
    (:func:`preflight`); it is locked for the whole run. On failure or interruption the
    staging folder becomes ``<folder>.failed-<time>`` with a FAILED marker and the
    partial executed notebook, and ``folder`` is untouched. ``notes`` (a callable)
    receives one-line reports about leftovers of earlier crashes.
    """
    import logging

    notes = notes or (lambda line: print(f"stagewise: {line}", file=sys.stderr))
    folder = rundir.absolute(folder)
    preflight(chapter, folder)
    # After an interruption, the notebook client's pending tasks end with 'Kernel died';
    # asyncio would print them as tracebacks at exit. The run's own one-line report says it.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    with locks.FolderLock(folder) as lock:
        if lock.took_over_from:
            notes(f"took over the lock of {folder} from pid {lock.took_over_from}, which has ended")
        for line in leftovers.recover(folder, chapter.name):
            notes(line)
        rundir.check_target(folder, chapter.name)  # again, now that the folder is ours
        return _execute_locked(chapter, parameters, folder, progress)


def _execute_locked(chapter: Chapter, parameters: dict[str, Any], folder: Path, progress: bool) -> RunOutcome:
    import tempfile

    import papermill

    staging = rundir.new_staging(folder, chapter.name)
    socket_dir = tempfile.mkdtemp(prefix="sw-kernel-")
    notebook_path = staging / f"{chapter.name}.ipynb"
    started = time.time()
    previous_env = os.environ.get(RUN_DIR_ENV)
    os.environ[RUN_DIR_ENV] = str(staging)
    previous_tty = os.environ.pop(PROGRESS_TTY_ENV, None)
    if progress and sys.stderr.isatty():  # the chapter's long loops draw their bars on this terminal
        os.environ[PROGRESS_TTY_ENV] = os.ttyname(sys.stderr.fileno())
    extra = os.environ.get(EXTRA_CHAPTERS_ENV)
    if extra:  # the kernel runs in the staging folder: relative chapter folders must not move with it
        os.environ[EXTRA_CHAPTERS_ENV] = os.pathsep.join(os.path.abspath(p) for p in extra.split(os.pathsep) if p)
    try:
        faults.point("before-papermill")
        # Only the values that differ from the declared defaults are injected: a default run
        # (and the book) shows the one declared parameters cell, with no injected copy.
        injected = {k: v for k, v in parameters.items() if v != chapter.parameters[k].default}
        # Taken before executing: an edit to src/ during the run must leave its outputs stale.
        fingerprint = code_fingerprint(chapter.source)
        papermill.execute_notebook(
            chapter.notebook(), str(notebook_path), parameters=injected, cwd=str(staging),
            kernel_name="python3", progress_bar=progress, log_output=False,
            report_mode=False, request_save_on_cell_execute=True,
            kernel_manager_class=_kernel_manager_class(socket_dir))
        _forget_machine_paths(notebook_path)
        results_path = staging / "results.json"
        if not results_path.exists():
            raise RuntimeError("the notebook finished without writing results.json (missing run.finish()?)")
        faults.point("after-papermill")
        results = json.loads(results_path.read_text())
        results["provenance"].update(
            wall_seconds=round(time.time() - started, 2),
            command=" ".join(sys.argv) if sys.argv and sys.argv[0].endswith("stagewise") else "stagewise (library call)",
            code_fingerprint=fingerprint)
        rundir.write_text_atomic(results_path, json.dumps(results, indent=2))
        from stagewise.core.run import pages
        from stagewise.core.run.labels import statement_labels   # not session: the parent never imports torch
        pages.write(staging, chapter.name, chapter.title, statement_labels(chapter.name))  # its two pages
        rundir.install(staging, folder, chapter.name)
    except BaseException as err:  # noqa: BLE001 - interruptions must also leave a marked partial run
        summary = _error_summary(err)
        results_path = staging / "results.json"
        try:
            if results_path.exists():
                results = json.loads(results_path.read_text())
                results["status"] = "failed"
                rundir.write_text_atomic(results_path, json.dumps(results, indent=2))
        except (OSError, ValueError):  # e.g. a full disk: a results.json claiming completion must not stay
            try:
                os.replace(results_path, staging / "results.incomplete.json")
            except OSError:
                pass
        log = Path(socket_dir) / KERNEL_LOG
        try:
            if log.is_file() and log.stat().st_size and staging.exists():
                shutil.copyfile(log, staging / KERNEL_LOG)
        except OSError:
            pass
        failed = rundir.fail(staging, folder, summary) if staging.exists() else staging
        raise RunFailed(summary, failed) from err
    finally:
        shutil.rmtree(socket_dir, ignore_errors=True)
        if previous_env is None:
            os.environ.pop(RUN_DIR_ENV, None)
        else:
            os.environ[RUN_DIR_ENV] = previous_env
        os.environ.pop(PROGRESS_TTY_ENV, None)
        if previous_tty is not None:
            os.environ[PROGRESS_TTY_ENV] = previous_tty
    return RunOutcome(folder, results)
