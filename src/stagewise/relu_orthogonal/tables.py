"""Small Markdown tables for the relu-orthogonal chapter."""
from __future__ import annotations

import numpy as np


def markdown_table(columns: list[str], rows: list) -> "object":
    """A small Markdown table for display in the chapter (floats to 4 significant digits)."""
    from IPython.display import Markdown

    def cell(v):
        if isinstance(v, (float, np.floating)):
            return f"{v:.4g}"
        return str(v)
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return Markdown("\n".join(lines))
