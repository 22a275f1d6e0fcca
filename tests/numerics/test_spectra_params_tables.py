"""Shared spectra (stable rank, non-top fraction), parameter packing and Markdown tables."""
import numpy as np
import pytest
import torch

from stagewise.numerics import params, spectra, tables


def test_stable_rank_of_known_matrices():
    eye = torch.eye(4, dtype=torch.float64)
    rank_one = torch.outer(torch.arange(1.0, 4.0), torch.arange(1.0, 3.0)).double()
    assert float(spectra.stable_rank(eye)) == pytest.approx(4.0)
    assert float(spectra.stable_rank(rank_one)) == pytest.approx(1.0)
    assert torch.isnan(spectra.stable_rank(torch.zeros(3, 3)))
    assert spectra.stable_rank_np([[3.0, 4.0], [1.0, 0.0]]) == pytest.approx([25 / 16, 1.0])
    assert spectra.nontop_fraction(rank_one) == pytest.approx(0.0, abs=1e-12)
    assert spectra.nontop_fraction(eye) == pytest.approx(0.75)
    assert spectra.nontop_fraction(torch.zeros(2, 2)) == 0.0


def test_flatten_and_pack_round_trip():
    g = torch.Generator().manual_seed(0)
    ps = [torch.randn(3, 4, 2, generator=g), torch.randn(3, 5, generator=g)]
    flat = params.flatten_batched(ps)
    assert flat.shape == (3, 13)
    assert all(torch.equal(a, b) for a, b in zip(params.unflatten_batched(flat, ps), ps))
    vec = params.pack(ps)
    assert vec.shape == (39,)
    assert all(torch.equal(a, b) for a, b in zip(params.unpacker(ps)(vec), ps))


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
