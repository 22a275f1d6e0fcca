"""Figure style and export: every figure as PDF, SVG and PNG under one stable stem, with its provenance."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

import matplotlib.pyplot as plt

from stagewise.core.figures import styles

FORMATS = ("pdf", "svg", "png")
#: The book's own look (``src/stagewise/core/figures/styles/book.mplstyle``), as rcParams.
STYLE = styles.resolve("book").rc


def use_style() -> None:
    """The book's style for figures drawn without a render function (Matplotlib's global rcParams); in a
    notebook kernel, figures are shown at twice their CSS size (``retina``), so that they stay sharp on high-DPI
    screens at the page's column width."""
    import matplotlib as mpl
    mpl.rcParams.update(STYLE)
    try:
        from IPython import get_ipython
        if get_ipython() is not None:
            from matplotlib_inline.backend_inline import set_matplotlib_formats
            set_matplotlib_formats("retina")
    except ImportError:  # outside a notebook's environment there is nothing to show
        pass


class ForeignFile(FileExistsError):
    """An output path holds a file that stagewise did not write; it is left alone (one-line message)."""


def _ours(path: Path) -> bool:
    """A file this package wrote: its embedded metadata names stagewise (PDF Creator, SVG/PNG description)."""
    try:
        return b"stagewise" in path.read_bytes()
    except OSError:
        return False


def save(fig: plt.Figure, stem: str, directory: Path, provenance: dict[str, Any], style: styles.Style | None = None,
         formats: Iterable[str] = FORMATS, refuse_foreign: bool = False) -> list[Path]:
    """Write ``directory/stem.<fmt>`` for each format, in ``style`` (default: the book's). The commit,
    parameters, seed, device and the style are embedded in each file's own metadata, so that a figure copied into
    a talk still says where it came from. Fonts stay editable: TrueType in PDFs, text as text in SVGs."""
    style = style or styles.resolve("book")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    keep = {k: provenance[k] for k in ("chapter", "commit", "dirty", "seed", "device", "parameters") if k in provenance}
    summary = json.dumps({**keep, "style": style.name}, default=str, sort_keys=True)
    title = f"{stem} (stagewise)"
    metadata = {
        "pdf": {"Title": title, "Subject": summary, "Creator": "stagewise", "CreationDate": None},
        "svg": {"Title": title, "Description": summary, "Date": None},
        "png": {"Title": title, "Description": summary, "Software": "stagewise"},
    }
    paths = [directory / f"{stem}.{fmt}" for fmt in formats]
    if refuse_foreign:
        for path in paths:
            if path.exists() and not _ours(path):
                raise ForeignFile(f"--out: {path} exists and was not written by stagewise; not overwritten "
                                  "(choose another --out)")
    with style.context():
        for path in paths:
            tmp = path.with_name(f".{path.name}.partial")
            fig.savefig(tmp, format=path.suffix[1:], metadata=metadata[path.suffix[1:]], dpi=style.dpi)
            tmp.replace(path)
    return paths


def export(fig: plt.Figure, stem: str, directory: Path, provenance: dict[str, Any],
           sidecar: dict[str, Any] | None = None) -> list[Path]:
    """Write ``directory/stem.{pdf,svg,png}`` in the book's style and ``stem.json``: the provenance and, for a
    figure drawn by a render function, its data sidecar (:mod:`stagewise.core.figures.sidecar`)."""
    paths = save(fig, stem, directory, provenance)
    record = {"figure": stem, **provenance, **({"sidecar": sidecar} if sidecar is not None else {})}
    (Path(directory) / f"{stem}.json").write_text(json.dumps(record, indent=2, default=str))
    return paths
