"""One process per run folder (and per book build): ``flock`` on a lock file beside it."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from stagewise.core.run.rundir import FolderBusy, OutputRefused, lock_path


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
