"""Fault injection for the safety tests: named points where a run can be made to fail.

Production code calls :func:`point` at the places where a crash matters (before
papermill, inside the notebook, in the middle of the final swap, while writing
results). Nothing happens unless ``STAGEWISE_FAULT`` names that point, as
``POINT:ACTION`` (several separated by commas):

``kill``         SIGKILL this process (a crash with no clean-up at all)
``kill-parent``  SIGKILL the parent process (from the notebook kernel: kills the runner)
``interrupt``    SIGINT to this process (what Ctrl-C in a terminal sends)
``interrupt-parent``  SIGINT to the parent process (from the kernel: Ctrl-C reaching the runner)
``term-parent``  SIGTERM to the parent process (a scheduler stopping the runner)
``stop``         SIGSTOP this process, holding whatever it holds, until a SIGCONT
``enospc``       raise ``OSError(ENOSPC)`` (a full disk at this write)

The tests in ``tests/core/test_rundir.py`` use it; see the README's guarantees.
"""
from __future__ import annotations

import errno
import os
import signal

FAULT_ENV = "STAGEWISE_FAULT"


def _actions(name: str) -> list[str]:
    spec = os.environ.get(FAULT_ENV, "")
    return [item.rsplit(":", 1)[1] for item in spec.split(",") if ":" in item and item.rsplit(":", 1)[0] == name]


def point(name: str) -> None:
    """A place where the fault named ``name`` (if requested) strikes."""
    for action in _actions(name):
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "kill-parent":
            os.kill(os.getppid(), signal.SIGKILL)
        elif action == "interrupt":
            os.kill(os.getpid(), signal.SIGINT)
        elif action == "interrupt-parent":
            os.kill(os.getppid(), signal.SIGINT)
        elif action == "term-parent":
            os.kill(os.getppid(), signal.SIGTERM)
        elif action == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)  # the test resumes it with SIGCONT
        elif action == "enospc":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"<fault injected at {name}>")
        else:
            raise ValueError(f"{FAULT_ENV}: unknown action {action!r} at point {name!r}")
