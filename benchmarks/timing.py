"""The one timing helper of the benchmarks: a fast path against its plain reference, same run.

Every ``benchmarks/bench_<chapter_slug>.py`` times the package's batched code against a
plain reference loop (``stagewise.<chapter_slug>.reference``) on the same problem, in the
same process, and prints the ratio, never an absolute time to compare across machines:

    from timing import Comparison, setup
    setup()                                   # one torch thread (the book's default) unless --threads
    with Comparison("Example 1, 32 restarts x 300 steps") as c:
        fast = c.time("batched", lambda: ...)
        slow = c.time("reference loop", lambda: ...)
        c.same(fast, slow, tol=1e-12)         # both give the same numbers

``make bench`` runs every ``bench_*.py``.
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Callable


def setup(description: str | None = None) -> argparse.Namespace:
    """Parse ``--threads`` and pin torch's thread count (one by default, as in the book)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1, as in the book)")
    args, _ = parser.parse_known_args()
    import torch
    torch.set_num_threads(args.threads)
    return args


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def max_difference(a: Any, b: Any) -> float:
    """Largest absolute difference between two results (tensors, arrays, numbers, or lists of them)."""
    import numpy as np
    import torch

    def flat(x):
        if isinstance(x, torch.Tensor):
            return x.detach().cpu().double().numpy().ravel()
        if isinstance(x, (list, tuple)):
            return np.concatenate([flat(v) for v in x]) if x else np.zeros(0)
        return np.asarray(x, dtype=float).ravel()
    fa, fb = flat(a), flat(b)
    if fa.shape != fb.shape:
        return float("inf")
    return float(np.max(np.abs(fa - fb))) if fa.size else 0.0


class Comparison:
    """Times named variants of one computation and prints them with ratios to the first one."""

    def __init__(self, title: str):
        self.title = title
        self.times: dict[str, float] = {}

    def __enter__(self) -> "Comparison":
        print(self.title)
        return self

    def time(self, name: str, fn: Callable[[], Any]) -> Any:
        seconds, out = timed(fn)
        self.times[name] = seconds
        print(f"  {name:32s} {seconds:8.3f} s")
        return out

    def same(self, a: Any, b: Any, tol: float) -> float:
        """Print (and return) the largest difference of two results; warn when above ``tol``."""
        diff = max_difference(a, b)
        flag = "" if diff <= tol else f"   <-- above {tol:g}!"
        print(f"  same numbers: max difference {diff:.1e}{flag}")
        return diff

    def __exit__(self, *exc) -> None:
        if exc[0] is None and len(self.times) >= 2:
            names = list(self.times)
            fast = self.times[names[0]]
            for name in names[1:]:
                print(f"  {name} / {names[0]}: x{self.times[name] / max(fast, 1e-12):.1f}")
        sys.stdout.flush()
