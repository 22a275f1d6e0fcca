"""Tests of stagewise.relu_orthogonal.data: Assumption 3's initialisation, the mask of Assumption 4
(def-relu-orthogonal-mask), the He initialisation of Fig. 6 and seeded draws."""
import numpy as np
import pytest

from stagewise.relu_orthogonal import data


def test_draws_are_seeded_and_distinct_per_key():
    """Seeded draws: the same (stream, key) gives the same draw, different keys independent draws."""
    a = data.draw_instance(data.draw_seed(123, 0), 12, 5, "gaussian", "random")
    b = data.draw_instance(data.draw_seed(123, 0), 12, 5, "gaussian", "random")
    c = data.draw_instance(data.draw_seed(123, 1), 12, 5, "gaussian", "random")
    d = data.draw_instance(data.draw_seed(123, 12, 0), 12, 5, "gaussian", "random")
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c[0]) and not np.array_equal(a[0], d[0])


def test_balanced_init_and_mask():
    """Assumption 3 (unit directions, signs) and the mask M_ij = 1{s_j y_i > 0} 1{<w_j(0), x_i> > 0}."""
    y, U, s, M = data.draw_instance(7, 10, 6, "gaussian", "random")
    np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0, rtol=1e-14)
    assert set(np.unique(s)) <= {-1.0, 1.0}
    for i in range(10):
        for j in range(6):
            assert M[i, j] == (s[j] * y[i] > 0 and U[j, i] > 0)
    _, _, s_pos, _ = data.draw_instance(7, 10, 6, "abs_gaussian", "positive")
    assert np.all(s_pos == 1.0)


def test_uncovered_points_and_report():
    """Assumption 4(i): zero rows (uncovered points), zero columns (dormant neurons), repeated columns."""
    M = np.array([[1, 1, 0], [0, 0, 0], [1, 1, 0]], bool)
    assert data.uncovered_points(M).tolist() == [1]
    rep = data.coverage_report(M)
    assert rep["dormant_neurons"].tolist() == [2] and rep["distinct_columns"] is False


def test_he_init_expected_norm():
    """Fig. 6's lazy contrast: PyTorch's uniform He init has E||theta_0||^2 = (m+1)/3."""
    W, a = data.he_init(np.random.default_rng(0), 400, 8, 32)
    assert W.shape == (400, 8, 32) and a.shape == (400, 8)
    norm = (W ** 2).sum(axis=(1, 2)) + (a ** 2).sum(axis=1)
    assert norm.mean() == pytest.approx(9 / 3, rel=0.03)


def test_unknown_label_kind():
    """Only the label kinds of the chapter are allowed."""
    with pytest.raises(ValueError, match="unknown label kind"):
        data.make_labels(3, "cauchy", np.random.default_rng(0))
