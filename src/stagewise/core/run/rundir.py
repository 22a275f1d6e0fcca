"""Run folders that never lose a user's data (locks in :mod:`.locks`, crash leftovers in :mod:`.leftovers`).

The guarantees (also stated in the README):

* A run writes into a hidden staging folder ``.<name>.partial-<pid>`` beside its target
  and moves it into place only once the notebook has finished and ``results.json`` is
  written. Until then the target is not touched.
* The target may be a new path, an empty folder, or *an earlier run of the same chapter*:
  a folder whose manifest (``.stagewise-run.json``, written by the run) lists every file
  in it with its SHA-256, so that nothing foreign and nothing edited since is in it.
  Anything else (a folder with other files, an edited run, a run of another chapter, a
  file, a symbolic link) is refused before any compute (:class:`OutputRefused`).
* When an earlier run is replaced, it is renamed ``<name>.previous`` for the instant of
  the swap and removed once the new run is in place. A crash in between leaves
  ``<name>.previous``, which the next run or build in the same place puts back.
* One run at a time per target: a lock file ``.<name>.lock`` beside it, held with
  ``flock`` for the whole run. A second run is refused (:class:`FolderBusy`, naming the
  holder's pid). The kernel drops the lock of a dead process, so a stale lock file is
  simply taken over (and reported).
* A killed run leaves its staging folder. The next run or build in the same place marks
  it with a ``FAILED`` file and reports it; ``stagewise clean --partial`` removes it.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
from datetime import datetime
from pathlib import Path

from stagewise.core.run import faults
#: The notebook finds its staging folder in this variable (set by the runner).
RUN_DIR_ENV = "STAGEWISE_RUN_DIR"
#: Set by the runner to the terminal of ``stagewise run`` (only when its stderr is a terminal): the
#: chapter's progress bars (``Run.progress``) are drawn there.
PROGRESS_TTY_ENV = "STAGEWISE_PROGRESS_TTY"
MANIFEST = ".stagewise-run.json"
STAGING_MARKER = ".stagewise-staging"
FAILED_MARKER = "FAILED"
PREVIOUS_SUFFIX = ".previous"


class OutputRefused(ValueError):
    """The output path is not a place a run may write to (one-line message; exit 2)."""


class FolderBusy(OutputRefused):
    """Another live process holds the lock of this run folder (exit 2)."""


# -- paths ---------------------------------------------------------------------------

def absolute(path: Path) -> Path:
    """Absolute path *without* following a final symbolic link (unlike ``resolve``)."""
    return Path(os.path.abspath(os.path.expanduser(str(path))))


def lock_path(folder: Path) -> Path:
    return folder.with_name(f".{folder.name}.lock")


def staging_path(folder: Path, pid: int | None = None) -> Path:
    return folder.with_name(f".{folder.name}.partial-{pid or os.getpid()}")


def previous_path(folder: Path) -> Path:
    return folder.with_name(folder.name + PREVIOUS_SUFFIX)


def failed_path(folder: Path) -> Path:
    """A new ``<name>.failed-<time>`` path (made unique)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate, n = folder.with_name(f"{folder.name}.failed-{stamp}"), 1
    while os.path.lexists(candidate):
        n += 1
        candidate = folder.with_name(f"{folder.name}.failed-{stamp}-{n}")
    return candidate


# -- the manifest: what a run wrote ----------------------------------------------------

def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _entries(folder: Path) -> list[Path]:
    """Every file, link and folder below ``folder`` (links are not followed)."""
    found = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            found.append(Path(root, name))
    return found


def write_manifest(folder: Path, chapter: str) -> None:
    files = {}
    for path in _entries(folder):
        rel = path.relative_to(folder).as_posix()
        if rel in (MANIFEST, STAGING_MARKER) or path.is_dir() and not path.is_symlink():
            continue
        files[rel] = _sha256(path) if path.is_file() and not path.is_symlink() else "not a file"
    write_text_atomic(folder / MANIFEST, json.dumps({"chapter": chapter, "files": files}, indent=1))


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and a rename: a reader sees the old or the new text."""
    faults.point("write:" + path.name)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def _legacy_layout(folder: Path, chapter: str, rel: str) -> bool:
    """Files of a run made before manifests existed (stagewise 0.1)."""
    if rel in ("results.json", f"{chapter}.ipynb", "figures"):
        return True
    parent, _, name = rel.partition("/")
    return parent == "figures" and name.startswith(chapter + "-") and "/" not in name and \
        Path(name).suffix in (".pdf", ".svg", ".png", ".json")


def foreign_files(folder: Path, chapter: str) -> tuple[str | None, list[str]]:
    """(chapter of the run in ``folder`` or None, files that are not that run's own).

    A run's own file is listed in its manifest with the same content hash; a run
    without a manifest (made by stagewise 0.1) may hold only its own file names.
    """
    owner = _run_chapter(folder)
    entries = sorted(_entries(folder))
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        listed = manifest.get("files", {}) if isinstance(manifest, dict) else {}
    except (OSError, ValueError):
        manifest = None
        listed = {}
    foreign = []
    for path in entries:
        rel = path.relative_to(folder).as_posix()
        if rel == MANIFEST:
            continue
        if manifest is None:
            if owner is None or not _legacy_layout(folder, owner, rel) or path.is_symlink():
                foreign.append(rel)
            continue
        if path.is_dir() and not path.is_symlink():
            if not any(name.startswith(rel + "/") for name in listed):
                foreign.append(rel + "/")
            continue
        expected = listed.get(rel)
        actual = _sha256(path) if path.is_file() and not path.is_symlink() else "not a file"
        if expected is None:
            foreign.append(rel)
        elif expected != actual:
            foreign.append(rel + " (changed since the run wrote it)")
    return owner, foreign


def _show(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_target(folder: Path, chapter: str, option: str = "--out") -> bool:
    """Whether ``folder`` holds an earlier run to replace; raise OutputRefused if it may not be used.

    Never alters anything.
    """
    where = f"{option} {folder}"
    if folder.is_symlink():
        raise OutputRefused(f"{where} is a symbolic link (to {os.readlink(folder)}); a run writes only into a real "
                            "folder: give the link's target or a new path")
    if not folder.exists():
        return False
    if not folder.is_dir():
        raise OutputRefused(f"{where} is an existing file; a run writes only into a new folder or into an "
                            f"earlier run of {chapter}")
    if not any(folder.iterdir()):
        return False
    owner, foreign = foreign_files(folder, chapter)
    if owner is None:
        raise OutputRefused(f"{where} already exists and is not a stagewise run (it holds {_show(foreign)}); "
                            "choose a new folder")
    if owner != chapter:
        raise OutputRefused(f"{where} holds a run of {owner}, not of {chapter}; choose a new folder")
    if foreign:
        raise OutputRefused(f"{where} holds an earlier run of {chapter} plus files it did not write "
                            f"({_show(foreign)}); move them away or choose a new folder")
    previous = previous_path(folder)
    if os.path.lexists(previous) and not _is_leftover_previous(previous, chapter):
        raise OutputRefused(f"{previous} is in the way of replacing {folder} (it is not a stagewise leftover); "
                            "move it away")
    return True


def _is_leftover_previous(previous: Path, chapter: str) -> bool:
    """``<name>.previous`` left by an interrupted swap: an intact run of ``chapter``."""
    if previous.is_symlink() or not previous.is_dir() or not (previous / MANIFEST).is_file():
        return False
    owner, foreign = foreign_files(previous, chapter)
    return owner == chapter and not foreign


def writable_parent(folder: Path, option: str = "--out") -> None:
    """Create the parent folders of ``folder``; refuse (one line) when that or writing there fails."""
    parent = folder.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputRefused(f"{option} {folder}: cannot create {err.filename or parent}: "
                            f"{err.strerror or err}") from None
    if not parent.is_dir():
        raise OutputRefused(f"{option} {folder}: {parent} is not a folder")


def _run_chapter(folder: Path) -> str | None:
    try:
        results = json.loads((folder / "results.json").read_text())
        return results.get("chapter") if isinstance(results, dict) else None
    except (OSError, ValueError):
        return None


def _is_staging(path: Path) -> bool:
    """A staging folder made by stagewise: its marker, or (in the instant before the swap) its manifest."""
    return path.is_dir() and not path.is_symlink() and \
        ((path / STAGING_MARKER).is_file() or (path / MANIFEST).is_file())


def _remove_run(folder: Path) -> None:
    """Remove a folder a run made: first renamed (atomic), then deleted."""
    trash = folder.with_name(f".{folder.name}.trash-{os.getpid()}")
    os.rename(folder, trash)
    shutil.rmtree(trash, ignore_errors=True)


# -- the run folder's life --------------------------------------------------------------

def new_staging(folder: Path, chapter: str) -> Path:
    staging = staging_path(folder)
    if os.path.lexists(staging):  # our own pid's leftover: only possible after pid reuse
        if _is_staging(staging):
            shutil.rmtree(staging)
        else:
            raise OutputRefused(f"{staging} is in the way and was not made by stagewise; move it away")
    staging.mkdir()
    (staging / STAGING_MARKER).write_text(f"{os.getpid()} {chapter}\n")
    return staging


def install(staging: Path, folder: Path, chapter: str) -> None:
    """Move a finished staging folder into place (call with the folder's lock held)."""
    (staging / STAGING_MARKER).unlink()
    write_manifest(staging, chapter)
    faults.point("swap-start")
    if folder.is_dir() and not folder.is_symlink() and any(folder.iterdir()):
        if not check_target(folder, chapter):  # re-checked under the lock: still only our own files
            raise OutputRefused(f"{folder} changed during the run; the new run is kept in {staging}")
        previous = previous_path(folder)
        os.rename(folder, previous)
        faults.point("swap-middle")
        os.rename(staging, folder)
        faults.point("swap-end")
        _remove_run(previous)
    else:
        os.rename(staging, folder)  # onto a missing path or an empty folder


def fail(staging: Path, folder: Path, message: str) -> Path:
    """Keep a failed run's staging folder as ``<name>.failed-<time>`` with a FAILED marker."""
    try:
        (staging / FAILED_MARKER).write_text(message + "\n")
    except OSError:  # a full disk must not hide the original error: an empty marker still marks
        try:
            (staging / FAILED_MARKER).touch()
        except OSError:
            pass
    try:
        (staging / STAGING_MARKER).unlink()
    except OSError:
        pass
    target = failed_path(folder)
    try:
        os.rename(staging, target)
    except OSError:
        return staging
    return target
