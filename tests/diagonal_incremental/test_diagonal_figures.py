"""The chapter's table of Algorithm 1's stages (alg-diagonal-incremental-alg1) and a figure, rendered."""
import matplotlib
import numpy as np
import torch

from stagewise.diagonal_incremental import algorithm, descent, figures, networks

matplotlib.use("Agg")


def test_stage_table_and_conservation_figure():
    """One table row per stage with KQ/VO coordinate names; the conservation figure draws."""
    m = networks.LinearDiagonal(torch.eye(4, dtype=torch.float64),
                                torch.tensor([0.9, 0.0, -0.5, 0.3], dtype=torch.float64))
    table = figures.stage_table(algorithm.algorithm1(m), d=2).data
    lines = table.splitlines()
    assert len(lines) == 2 + 3 and "| 1 | 1.1111 | KQ 0 | + |" in lines[2] and "VO 0" in lines[3]
    cs = descent.ConservationStudy([0.1, 0.05], [1e-2, 5e-3], 0.1, np.array([1.0]))
    fig = figures.conservation_figure(cs)
    assert len(fig.axes) == 1
