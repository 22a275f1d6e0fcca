"""Small Markdown tables for the chapters (they render in HTML and in the PDF alike)."""
from __future__ import annotations

import numpy as np


def cell(value) -> str:
    """A table cell: floats to 4 significant digits, everything else as text."""
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    return str(value)


def markdown_lines(columns: list[str], rows: list) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]


def markdown_table(columns: list[str], rows: list):
    """A Markdown table for display in a chapter."""
    from IPython.display import Markdown
    return Markdown("\n".join(markdown_lines(columns, rows)))
