"""Run folders that never lose a user's data.

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
import fcntl
import hashlib
import json
import os
import shutil
from datetime import datetime
from pathlib import Path

from stagewise.core import faults
#: The notebook finds its staging folder in this variable (set by the runner).
RUN_DIR_ENV = "STAGEWISE_RUN_DIR"
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


# -- the lock ---------------------------------------------------------------------------

def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_holder(path: Path) -> int | None:
    try:
        first = path.read_text().split()
        return int(first[0]) if first else None
    except (OSError, ValueError, IndexError):
        return None


class FolderLock:
    """An exclusive ``flock`` on ``.<name>.lock`` beside a run folder (or at ``path``).

    The kernel releases it when the holder dies, however it dies; the pid written in
    the file names the holder in the refusal message.
    """

    def __init__(self, folder: Path, what: str = "run folder", path: Path | None = None):
        self.folder = folder
        self.path = path or lock_path(folder)
        self.what = what
        self.fd: int | None = None
        self.took_over_from: int | None = None

    def acquire(self) -> "FolderLock":
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as err:
                raise OutputRefused(f"cannot lock {self.what} {self.folder}: cannot write {self.path.parent}: "
                                    f"{err.strerror}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                holder = _read_holder(self.path)
                who = f"pid {holder}" if holder else "another process"
                raise FolderBusy(f"{self.what} {self.folder} is in use by another stagewise process ({who}); "
                                 "wait for it to finish or choose another folder") from None
            try:  # the file we locked must still be the one at the path (a releaser unlinks it)
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            break
        holder = _read_holder(self.path)
        if holder and holder != os.getpid() and not _pid_alive(holder):
            self.took_over_from = holder
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd
        return self

    def ensure_free(self) -> None:
        """Raise FolderBusy if a live process holds the lock now (creates nothing)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(self.path)
            who = f"pid {holder}" if holder else "another process"
            raise FolderBusy(f"{self.what} {self.folder} is in use by another stagewise process ({who}); "
                             "wait for it to finish or choose another folder") from None
        finally:
            os.close(fd)

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


# -- leftovers of killed runs -----------------------------------------------------------

def _is_staging(path: Path) -> bool:
    """A staging folder made by stagewise: its marker, or (in the instant before the swap) its manifest."""
    return path.is_dir() and not path.is_symlink() and \
        ((path / STAGING_MARKER).is_file() or (path / MANIFEST).is_file())


def mark_killed(staging: Path) -> bool:
    """Write a FAILED marker into a dead run's staging folder; True if it was not marked yet."""
    marker = staging / FAILED_MARKER
    if marker.exists():
        return False
    pid = staging.name.rsplit("-", 1)[-1]
    marker.write_text(f"killed: the run (pid {pid}) ended before it finished; nothing here is a complete "
                      "result. 'stagewise clean --partial' removes this folder.\n")
    return True


def recover(folder: Path, chapter: str | None = None) -> list[str]:
    """Tidy up after crashes at ``folder``; call with its lock held. Returns report lines.

    * staging folders of dead runs are marked FAILED (kept for diagnosis);
    * ``<name>.previous`` left by a swap that was cut off is put back (target missing)
      or dropped (target already holds the newer complete run).
    """
    notes = []
    parent = folder.parent
    if not parent.is_dir():
        return notes
    for staging in sorted(parent.glob(f".{glob_escape(folder.name)}.partial-*")):
        if staging == staging_path(folder) or not _is_staging(staging):
            continue
        if mark_killed(staging):
            notes.append(f"found {staging}, left by a run that was killed; marked it FAILED "
                         "('stagewise clean --partial' removes it)")
        else:
            notes.append(f"{staging} is a killed run's leftover ('stagewise clean --partial' removes it)")
    previous = previous_path(folder)
    owner = _run_chapter(previous)
    if owner and (chapter is None or owner == chapter) and _is_leftover_previous(previous, owner):
        if not os.path.lexists(folder):
            os.rename(previous, folder)
            notes.append(f"restored the earlier run {folder} from an interrupted swap")
        elif folder.is_dir() and (folder / MANIFEST).is_file():
            _remove_run(previous)
            notes.append(f"removed {previous}, the run replaced by an interrupted swap")
    return notes


def _run_chapter(folder: Path) -> str | None:
    try:
        results = json.loads((folder / "results.json").read_text())
        return results.get("chapter") if isinstance(results, dict) else None
    except (OSError, ValueError):
        return None


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


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


def find_leftovers(roots: list[Path], partial: bool = True, failed: bool = False) -> list[Path]:
    """Killed runs' staging folders (``.<name>.partial-<pid>``, with stagewise's marker) and,
    with ``failed``, failed runs' folders (``<name>.failed-<time>`` holding a FAILED marker)."""
    found = []
    for root in roots:
        if not root.is_dir():
            continue
        for dirpath, dirs, _ in os.walk(root):
            for name in list(dirs):
                path = Path(dirpath, name)
                if path.is_symlink():
                    continue
                if partial and name.startswith(".") and ".partial-" in name and _is_staging(path) or \
                        failed and ".failed-" in name and (path / FAILED_MARKER).is_file():
                    found.append(path)
                    dirs.remove(name)
    return sorted(found)


def remove_leftover(path: Path) -> bool:
    """Remove a leftover found by :func:`find_leftovers` unless its run still holds the lock."""
    target = target_of(path) if ".partial-" in path.name else None
    if target is None:
        _remove_run(path)
        return True
    try:
        with FolderLock(target):
            if path.name == staging_path(target).name:  # our own pid: cannot be a leftover
                return False
            _remove_run(path)
            return True
    except FolderBusy:
        return False


def target_of(staging: Path) -> Path:
    """The run folder a staging folder ``.<name>.partial-<pid>`` was meant for."""
    name = staging.name[1:].rsplit(".partial-", 1)[0]
    return staging.with_name(name)


def is_disk_full(err: BaseException) -> bool:
    return isinstance(err, OSError) and err.errno == errno.ENOSPC
