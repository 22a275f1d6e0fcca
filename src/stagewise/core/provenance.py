"""Where a result came from: commit, tree state, package versions, code fingerprint."""
from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
from pathlib import Path

from stagewise.core.registry import PROJECT_ROOT

TRACKED_PACKAGES = ("stagewise", "torch", "numpy", "scipy", "matplotlib", "papermill", "jupyter-book")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state() -> dict[str, object]:
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit or "unknown", "dirty": bool(status) if status is not None else True}


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def code_fingerprint(chapter_source: Path, root: Path = PROJECT_ROOT) -> str:
    """Hash of everything a chapter's outputs depend on.

    The chapter source, every file of the package and the pinned requirements:
    unlike jupyter-cache (which hashes code cells only), a change anywhere in
    ``src/`` marks every chapter stale.
    """
    digest = hashlib.sha256()
    files = sorted((root / "src").rglob("*.py")) + [root / "requirements.txt", root / "pyproject.toml"]
    for path in [chapter_source, *files]:
        if path.is_file():
            digest.update(str(path.relative_to(root) if path.is_relative_to(root) else path.name).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()
