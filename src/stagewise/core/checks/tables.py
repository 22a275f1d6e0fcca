"""Small Markdown tables for the chapters (they render in HTML and in the PDF alike)."""
from __future__ import annotations

import numpy as np


def cell(value) -> str:
    """A table cell: floats to 4 significant digits, everything else as text."""
    if isinstance(value, (float, np.floating)):
        return f"{value:.4g}"
    return str(value)


def escape_pipes(text: str) -> str:
    """A cell's text with no bare ``|`` left to split the row: ``\\vert``/``\\Vert`` inside ``$...$`` math
    (where a Markdown escape would reach TeX), ``\\|`` outside it. A header ``$|S_k|$`` once turned a whole
    table into a paragraph of pipes."""
    parts = text.split("$")
    for i, part in enumerate(parts):
        parts[i] = part.replace("\\|", "\\Vert ").replace("|", "\\vert ") if i % 2 else part.replace("|", "\\|")
    return "$".join(parts)


def markdown_lines(columns: list[str], rows: list) -> list[str]:
    def line(cells) -> str:
        return "| " + " | ".join(escape_pipes(c) for c in cells) + " |"
    return [line(columns), "|" + "---|" * len(columns)] + [line(cell(v) for v in row) for row in rows]


def markdown_table(columns: list[str], rows: list):
    """A Markdown table for display in a chapter."""
    from IPython.display import Markdown
    return Markdown("\n".join(markdown_lines(columns, rows)))
