"""Render functions shared by chapters and tools: pure ``render(data, style) -> Figure`` (no torch, no computation).

A chapter's own figures live in its ``figures.py``; what is here is generic enough for more than one place.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def curves(data: dict[str, Any], style) -> "matplotlib.figure.Figure":  # noqa: F821 - annotation only
    """Lines against a shared x. ``data``: ``x`` (array), ``series`` ({label: array}), optional ``xlabel``,
    ``ylabel``, ``title``, ``logx``, ``logy`` (bools), ``reference`` ({label: array}, drawn dashed in the ink)."""
    fig, ax = style.subplots(size=(5.5, 3.4))
    x = np.asarray(data["x"])
    for label, y in data.get("series", {}).items():
        ax.plot(x, np.asarray(y), label=label)
    for label, y in data.get("reference", {}).items():
        ax.plot(x, np.asarray(y), ls="--", color=style.ink, lw=0.8 * style.rc.get("lines.linewidth", 1.5), label=label)
    ax.set_xscale("log" if data.get("logx") else "linear")
    ax.set_yscale("log" if data.get("logy") else "linear")
    ax.set_xlabel(data.get("xlabel", ""))
    ax.set_ylabel(data.get("ylabel", ""))
    if data.get("title"):
        ax.set_title(data["title"])
    if len(data.get("series", {})) + len(data.get("reference", {})) > 1:
        ax.legend()
    return fig
