"""Figure style and export: every figure as PDF, SVG and PNG under one stable stem."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt

FORMATS = ("pdf", "svg", "png")

STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 110,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "svg.hashsalt": "stagewise",  # stable SVG ids: identical figures give identical files
    "svg.fonttype": "none",
    "pdf.fonttype": 42,
}


def use_style() -> None:
    mpl.rcParams.update(STYLE)


def export(fig: plt.Figure, stem: str, directory: Path, provenance: dict[str, Any]) -> list[Path]:
    """Write ``directory/stem.{pdf,svg,png}`` and a ``stem.json`` provenance sidecar.

    The commit, parameters, seed and device are also embedded in each file's own
    metadata, so that a figure copied into a talk still says where it came from.
    """
    directory.mkdir(parents=True, exist_ok=True)
    summary = json.dumps({k: provenance[k] for k in ("chapter", "commit", "dirty", "seed", "device", "parameters")
                          if k in provenance}, default=str, sort_keys=True)
    title = f"{stem} (stagewise)"
    metadata = {
        "pdf": {"Title": title, "Subject": summary, "Creator": "stagewise", "CreationDate": None},
        "svg": {"Title": title, "Description": summary, "Date": None},
        "png": {"Title": title, "Description": summary},
    }
    paths = []
    for fmt in FORMATS:
        path = directory / f"{stem}.{fmt}"
        fig.savefig(path, format=fmt, metadata=metadata[fmt])
        paths.append(path)
    (directory / f"{stem}.json").write_text(json.dumps({"figure": stem, **provenance}, indent=2, default=str))
    return paths
