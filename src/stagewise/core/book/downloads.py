"""The as-downloaded lane (``make test-downloads``): each chapter exactly as a reader takes it away, run top to
bottom outside this checkout.

1. The package is built as a wheel and installed, not editable, into a fresh virtual environment with the pinned
   requirements (``requirements.txt`` with ``requirements.lock``).
2. For every chapter, in its own empty folder: the executed notebook the book's download button serves
   (``_build/html/_sources/chapters/<chapter>.ipynb``) and the MyST source as Binder opens it
   (``book/chapters/<chapter>.md``, read by jupytext), each run with no parameters by that environment's
   ``pytest --nbmake``; then the run's own ``results.json`` must have no failed check.

Nothing of the checkout is importable there: the registry finds the chapter's parameters in the wheel
(``stagewise/_chapters``), data come from the packages, outputs go to the folder the notebook runs in.

    python -m stagewise.core.book.downloads [--keep DIR] [CHAPTER...]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from stagewise.core.book.lanes import verdict
from stagewise.core.run.registry import PROJECT_ROOT, all_chapters

SERVED = PROJECT_ROOT / "_build" / "html" / "_sources" / "chapters"


def build_environment(where: Path) -> Path:
    """A fresh venv in ``where`` with the pinned requirements and the package installed from its wheel; returns
    its ``bin`` folder."""
    dist, tree = where / "dist", where / "source"           # built from a copy: the checkout gets no build/ folder
    for part in ("src", "book/chapters"):
        shutil.copytree(PROJECT_ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(PROJECT_ROOT / name, tree / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist),
                    str(tree)], check=True)
    wheel = next(dist.glob("stagewise-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    pip = [str(where / "venv" / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}   # nothing of this checkout
    subprocess.run(pip + ["-r", str(PROJECT_ROOT / "requirements.txt"), "-c", str(PROJECT_ROOT / "requirements.lock")],
                   check=True, env=clean)
    subprocess.run(pip + ["--no-deps", str(wheel)], check=True, env=clean)
    return where / "venv" / "bin"


def run_notebook(bin_dir: Path, notebook: Path, folder: Path, timeout: int = 1800) -> str:
    """Run ``notebook`` (copied into the empty ``folder``) with the environment's nbmake; '' when it ran and its
    checks passed, else what went wrong (one paragraph)."""
    folder.mkdir(parents=True)
    if notebook.suffix == ".md":                      # Binder: jupytext opens the MyST source as a notebook
        target = folder / (notebook.stem + ".ipynb")
        subprocess.run([str(bin_dir / "jupytext"), "--quiet", "--to", "ipynb", "-o", str(target), str(notebook)],
                       check=True)
    else:
        target = folder / notebook.name
        shutil.copy2(notebook, target)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(folder), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    done = subprocess.run([str(bin_dir / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbmake",
                           f"--nbmake-timeout={timeout}", target.name], cwd=folder, env=env, capture_output=True,
                          text=True)
    if done.returncode != 0:
        return done.stdout[-3000:]
    try:
        verdict(folder / "results.json")
    except AssertionError as err:
        return str(err)
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--keep", type=Path, help="work in DIR (kept) instead of a temporary folder")
    args = parser.parse_args(argv)
    names = args.chapters or [c.name for c in all_chapters()]
    if not SERVED.is_dir():
        print(f"no built book ({SERVED} missing): run `make book` first", file=sys.stderr)
        return 2
    where = args.keep or Path(tempfile.mkdtemp(prefix="stagewise-downloads-"))
    bin_dir = build_environment(where)
    problems = {}
    for name in names:
        for kind, source in (("download", SERVED / f"{name}.ipynb"),
                             ("binder", PROJECT_ROOT / "book" / "chapters" / f"{name}.md")):
            problem = run_notebook(bin_dir, source, where / "runs" / kind / name)
            print(f"{name:24s} {kind:9s} {'ok' if not problem else 'FAILED'}", flush=True)
            if problem:
                problems[f"{name} ({kind})"] = problem
    for what, problem in problems.items():
        print(f"\n== {what}\n{problem}", file=sys.stderr)
    if not args.keep:
        shutil.rmtree(where, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
