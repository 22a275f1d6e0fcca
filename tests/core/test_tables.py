"""Markdown tables (stagewise.core.checks.tables): the checks table and the chapters' own."""
import numpy as np

from stagewise.core.checks import tables


def test_markdown_table_lines():
    lines = tables.markdown_lines(["n", "value"], [[1, 0.123456], ["a", np.float64(2.0)]])
    assert lines == ["| n | value |", "|---|---|", "| 1 | 0.1235 |", "| a | 2 |"]


def test_markdown_table_with_pipes_in_math_stays_a_table():
    """Headers such as $|S_k|$ once broke a table into a paragraph of pipes in the book; parsed as the book
    parses Markdown outputs (markdown-it with tables and dollar math), the table keeps its columns."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin
    columns = ["k", "$|S_k|$", "a|b", "$\\|x\\|_2$"]
    parser = MarkdownIt("commonmark").enable("table").use(dollarmath_plugin)

    def header_cells(lines):
        tokens = parser.parse("\n".join(lines))
        heads = [t for t in tokens if t.type == "th_open"]
        maths = [c.content for t in tokens if t.type == "inline" for c in t.children or [] if c.type == "math_inline"]
        return len(heads), maths
    assert header_cells(tables.markdown_lines(columns, [[1, 2, 3, 4]])) == (4, ["\\vert S_k\\vert ", "\\Vert x\\Vert _2"])
    unescaped = ["| " + " | ".join(columns) + " |", "|" + "---|" * 4, "| 1 | 2 | 3 | 4 |"]
    assert header_cells(unescaped)[0] == 0  # control: the bare pipes split the header, no table at all
