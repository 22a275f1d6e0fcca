"""Where a result came from: commit, tree state, package versions, code fingerprint."""
from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess
from pathlib import Path

from stagewise.core.run.registry import PROJECT_ROOT

TRACKED_PACKAGES = ("stagewise", "torch", "numpy", "scipy", "matplotlib", "papermill", "jupyter-book")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state() -> dict[str, object]:
    """Commit and whether the tree differs from it: tracked changes anywhere, and untracked files under
    ``src/`` and ``book/`` (a new module or chapter file changes results too; ignored outputs do not count)."""
    commit = _git("rev-parse", "HEAD")
    tracked = _git("status", "--porcelain", "--untracked-files=no")
    untracked = _git("status", "--porcelain", "--untracked-files=all", "--", "src", "book")
    if tracked is None or untracked is None:
        return {"commit": commit or "unknown", "dirty": True}
    return {"commit": commit or "unknown", "dirty": bool(tracked) or bool(untracked)}


def versions() -> dict[str, str]:
    """Python and every installed distribution (numba, scikit-learn, mlxtend... change results too);
    the packages of ``TRACKED_PACKAGES`` are always present, as "not installed" if they are missing."""
    found = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and name not in found:
            found[name] = dist.version
    return dict(sorted(found.items(), key=lambda item: (item[0] != "python", item[0].lower())))


def code_fingerprint(chapter_source: Path, root: Path = PROJECT_ROOT) -> str:
    """Hash of everything a chapter's outputs depend on.

    The chapter source, every file of the package, the pinned requirements and the lock:
    unlike jupyter-cache (which hashes code cells only), a change anywhere in
    ``src/`` marks every chapter stale.
    """
    digest = hashlib.sha256()
    files = sorted((root / "src").rglob("*.py")) + [root / name for name in
                                                    ("requirements.txt", "requirements.lock", "pyproject.toml")]
    for path in [chapter_source, *files]:
        if path.is_file():
            digest.update(str(path.relative_to(root) if path.is_relative_to(root) else path.name).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


#: The parts of core/ that a chapter's kernel never imports (the command line, the book build, sweeps and the
#: campaigns run on them, the restyling command), as subpackages or modules relative to ``stagewise.core``;
#: ``tests/core/test_power.py`` checks it. They do not change what a chapter computes.
OUTSIDE_THE_KERNEL = frozenset({"cli", "book", "sweep", "figures.restyle"})


def outside_the_kernel(module: str) -> bool:
    """True for a module of core/ (dotted, relative to ``stagewise.core``) that no chapter's kernel imports."""
    return any(module == name or module.startswith(name + ".") for name in OUTSIDE_THE_KERNEL)


#: The drawing code: the render functions that turn a run's figure data into a Figure (each chapter's
#: ``figures.py``, core's ``figures.plots``), the figure styles and the export to PDF/SVG/PNG. It draws what a run
#: computed and computes nothing a run records: no value, row, claim or figure array depends on it (only the chapter's
#: code cells and the session, which saves the figures, import it; ``tests/core/test_power.py`` checks it). So a
#: result stored from a run (a mutation matrix, a mutant sample, a run at the paper's scale, whose figures the book
#: draws from their data with today's renderers) stays current when a figure is redrawn, while the book re-executes a
#: chapter whose drawing code changed (:func:`stagewise.core.book.build.book_inputs` adds these files).
DRAWING_IN_CORE = frozenset({"figures.export", "figures.plots", "figures.styles"})
DRAWING_IN_A_CHAPTER = "figures"


def drawing_files(chapter_name: str, root: Path = PROJECT_ROOT) -> list[Path]:
    """The drawing modules a chapter's figures come from (see ``DRAWING_IN_CORE``), sorted."""
    package = root / "src" / "stagewise"
    own = package / chapter_name.replace("-", "_") / f"{DRAWING_IN_A_CHAPTER}.py"
    core = [package / "core" / Path(*m.split(".")).with_suffix(".py") for m in DRAWING_IN_CORE]
    return sorted(f for f in [own, *core] if f.is_file())


def chapter_code_cells(chapter_source: Path) -> str:
    """The code cells of a chapter's MyST source, in order (what it computes; the prose can change without
    changing a number). Jupytext's own parse: a fenced code block inside prose is prose."""
    import jupytext
    notebook = jupytext.read(chapter_source)
    return "\n\x00\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")


def chapter_code_fingerprint(chapter_name: str, chapter_source: Path, root: Path = PROJECT_ROOT) -> str:
    """Hash of the code that computes what one chapter's run records: its source's code cells
    (:func:`chapter_code_cells`), its own subpackage (``src/stagewise/<slug>/``), the shared ``core/`` and
    ``numerics/`` (and the package's top-level modules), the requirements and the lock; without the drawing code
    (:func:`drawing_files`). No chapter imports another chapter's subpackage (``tests/core/test_power.py`` checks
    it), so a change in one chapter's code leaves the others' mutation matrices current
    (:mod:`stagewise.core.sweep.power`)."""
    package = root / "src" / "stagewise"
    own = package / chapter_name.replace("-", "_")
    shared = [package / "core", package / "numerics"]
    core = package / "core"
    drawing = set(drawing_files(chapter_name, root))
    files = sorted(package.glob("*.py")) + sorted(
        f for d in [*shared, own] if d.is_dir() for f in d.rglob("*.py")
        if f not in drawing and not (f.is_relative_to(core)
                                     and outside_the_kernel(".".join(f.relative_to(core).with_suffix("").parts))))
    digest = hashlib.sha256()
    digest.update(b"code cells of the chapter")
    digest.update(chapter_code_cells(chapter_source).encode())
    for path in [*files, *(root / n for n in ("requirements.txt", "requirements.lock", "pyproject.toml"))]:
        if path.is_file():
            digest.update(str(path.relative_to(root) if path.is_relative_to(root) else path.name).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()
