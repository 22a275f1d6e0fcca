"""Device choice, dtype, seeding and thread count, shared by every chapter."""
from __future__ import annotations

import os
import random

import numpy as np
import torch

#: The theory chapters need float64: tiny initializations underflow float32 quickly.
DEFAULT_DTYPE = torch.float64


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` picks CUDA when present, otherwise the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("parameter device: 'cuda' requested but no CUDA device is available; use auto or cpu")
    return torch.device(name)


def set_threads(threads: int | None = None) -> int:
    """Pin torch's CPU thread count.

    The book's loops are many small tensor operations; on a busy two-core machine
    one thread was measured 15x faster than two (thread hand-off dominates), so one
    thread is the default. ``STAGEWISE_TORCH_THREADS`` overrides it.
    """
    threads = threads or int(os.environ.get("STAGEWISE_TORCH_THREADS", "1"))
    torch.set_num_threads(threads)
    return threads


def seed_everything(seed: int) -> torch.Generator:
    """Seed Python, NumPy and torch; return a CPU generator for explicit draws.

    Random draws are made on the CPU and then moved, so that the same seed gives the
    same numbers whichever device runs the computation.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def stream_seed(seed: int, name: str) -> int:
    """A 63-bit seed for the random stream ``name`` of a run with seed ``seed``.

    Streams with different names are independent, and adding a stream never shifts the
    draws of another (unlike ``seed + 1`` offsets or one shared generator).
    """
    import hashlib
    digest = hashlib.sha256(f"stagewise:{int(seed)}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def describe(device: torch.device) -> str:
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    import platform
    return f"cpu ({platform.machine()}, {torch.get_num_threads()} torch thread(s), {os.cpu_count()} cores)"
