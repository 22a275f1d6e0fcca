"""Tests of ``stagewise.escape_speed.problems``: the datasets ``(X, G)`` of the chapter."""
import math

import torch

from stagewise.escape_speed import problems


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_circle_and_example1():
    """Proposition "Example 1": eight unit points on the circle with G_j = (-1)^j."""
    X, G = problems.example1_data()
    assert X.shape == (2, 8) and G.shape == (1, 8)
    assert torch.allclose(X.norm(dim=0), torch.ones(8, dtype=torch.float64))
    assert G[0].tolist() == [(-1.0) ** j for j in range(1, 9)]
    Xc, Gc = problems.circle_data(24, "cos3")
    assert abs(float(Gc.sum())) < 1e-12


def test_random_teacher_and_gaussian_shapes():
    """The generic problems (Lemma "Homogeneity", Proposition 3.2) and the teacher data of Proposition 2.2."""
    X, G = problems.random_problem(4, 30, 3, gen(1))
    assert X.shape == (4, 30) and G.shape == (3, 30)
    X, Y = problems.interior_teacher(20, 5, gen(2))
    assert X.shape == (5, 20) and abs(float(Y.norm()) - 1) < 1e-12 and bool((Y >= 0).all())
    X, G = problems.gaussian_data(20, 5, gen(3))
    assert X.shape == (5, 20) and G.shape == (1, 20) and math.isfinite(float(G.norm()))
