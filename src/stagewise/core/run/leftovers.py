"""What crashed runs leave behind: found, marked FAILED, put back or removed (``stagewise clean``)."""
from __future__ import annotations

import os
from pathlib import Path

from stagewise.core.run.locks import FolderLock
from stagewise.core.run.rundir import (FAILED_MARKER, MANIFEST, FolderBusy, _is_leftover_previous, _is_staging, _remove_run,
                                   _run_chapter, previous_path, staging_path)


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


def glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


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
