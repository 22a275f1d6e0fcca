"""The chapters as a reader runs them, without ``stagewise run``: the nbmake lanes.

*Source lane* (CI, ``make test-nbmake``): each chapter's MyST source converted by jupytext to a notebook in
``nbmake/`` (git-ignored, not a dot folder and outside ``_build``, which nbmake would skip), small parameters
injected by ``papermill --prepare-only`` through the chapter's public parameters cell (nothing test-only reaches
a reader's notebook), then ``pytest --nbmake`` on both cores (pytest-xdist), one torch thread per worker, a
per-cell timeout. A notebook passes when every cell runs and, at the end, its ``results.json`` has no failed
check (:func:`verdict`, run by the last cell the lane appends: the same ``results.json`` a run writes).

*As-downloaded lane* (``make test-downloads``): see :mod:`stagewise.core.book.downloads`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from stagewise.core.run.registry import PROJECT_ROOT

LANE_DIR = PROJECT_ROOT / "nbmake"
PARAMETERS_FILE = PROJECT_ROOT / "tests" / "nbmake" / "parameters.yaml"
CELL_TIMEOUT = 900
VERDICT_CELL = ("# nbmake lane: the chapter's own checks must pass (its results.json, as a run writes it)\n"
                "from stagewise.core.book.lanes import verdict\n"
                "verdict('results.json')\n")


def verdict(path: str | Path = "results.json") -> None:
    """Raise when a run's ``results.json`` is missing or has a failed check (theorem or sanity)."""
    path = Path(path)
    if not path.is_file():
        raise AssertionError(f"{path} was not written: the chapter did not reach run.finish()")
    results = json.loads(path.read_text())
    failed = [c["name"] for c in results.get("checks", []) if c.get("passed") is False]
    if failed:
        raise AssertionError(f"{results.get('chapter')}: failed checks: {'; '.join(failed)}")


def lane_parameters(path: Path = PARAMETERS_FILE) -> dict[str, dict]:
    """Each chapter's lane parameters: a mapping NAME: VALUE, or ``{atlas_point: i}``, the overrides of point ``i``
    of the chapter's parameter atlas, or ``{atlas_point: ci}``, its first CI point (:func:`atlas_point`)."""
    return {chapter: (dict(atlas_point(chapter, given["atlas_point"])["overrides"])
                      if isinstance(given, dict) and set(given) == {"atlas_point"} else given)
            for chapter, given in (yaml.safe_load(path.read_text()) or {}).items()}


def atlas_point(chapter: str, index: int | str = "ci") -> dict:
    """Point ``index`` of the chapter's parameter atlas, or its first CI point for ``"ci"``: the lane's run of it
    is judged as the atlas judges that point (:func:`stagewise.core.sweep.atlas.judge`), so CI runs it once."""
    from stagewise.core.sweep import atlas
    return atlas.load(chapter, ci=True)[1][0] if index == "ci" else atlas.load(chapter)[1][index]


def prepare(chapters: dict[str, dict], sources: dict[str, Path], folder: Path = LANE_DIR) -> list[Path]:
    """Convert each chapter to ``folder/<chapter>/<chapter>.ipynb`` (a folder each: a run writes its results.json
    and figures beside its notebook) with its lane parameters injected and the verdict cell appended; returns the
    notebooks. Each chapter's folder is emptied first; nothing else in ``folder`` is touched."""
    import shutil
    import nbformat
    notebooks = []
    for name, parameters in chapters.items():
        home = folder / name
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        plain = home / f".{name}.plain.ipynb"
        target = home / f"{name}.ipynb"
        subprocess.run([sys.executable, "-m", "jupytext", "--quiet", "--to", "ipynb", "-o", str(plain),
                        str(sources[name])], check=True, capture_output=True, text=True)
        argv = [sys.executable, "-m", "papermill", "--prepare-only", "--log-level", "ERROR", str(plain), str(target),
                "-k", "python3"]
        for key, value in (parameters or {}).items():
            argv += ["-y", yaml.safe_dump({key: value}, default_flow_style=True).strip()]
        subprocess.run(argv, check=True, capture_output=True, text=True)
        plain.unlink()
        notebook = nbformat.read(target, as_version=4)
        notebook.cells.append(nbformat.v4.new_code_cell(VERDICT_CELL, metadata={"tags": ["nbmake-verdict"]}))
        nbformat.write(notebook, target)
        notebooks.append(target)
    return notebooks


def run(notebooks: list[Path], workers: int = 2, timeout: int = CELL_TIMEOUT, cwd: Path = PROJECT_ROOT
        ) -> subprocess.CompletedProcess:
    """``pytest --nbmake`` over ``notebooks`` on ``workers`` processes, one torch/BLAS thread each."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               STAGEWISE_TORCH_THREADS="1", MPLBACKEND="Agg")
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--nbmake",
            f"--nbmake-timeout={timeout}", "-o", "addopts=", "--rootdir", str(cwd)]
    if workers > 1:
        argv += ["-n", str(workers)]
    return subprocess.run(argv + [str(n) for n in notebooks], cwd=cwd, env=env, capture_output=True, text=True)
