"""Tests of stagewise.relu_orthogonal.staircase: Theorem 2 and Eq. (15) on one Figure-1-type run (small)."""
import numpy as np
import pytest

from stagewise.relu_orthogonal import staircase


@pytest.fixture(scope="module")
def small_run():
    pred = staircase.predict_figure1(2, 16, 4, 1.0, 0.2, 100.0)
    return pred, staircase.train_figure1(pred)


def test_prediction_tables(small_run):
    """Algorithm 1's prediction: one table row per jump, one exponent row per stage (eqs. 10-11)."""
    pred, _ = small_run
    cols, rows = pred.jump_table()
    assert len(rows) == pred.lp.K and len(cols) == len(rows[0])
    cols, rows = pred.exponent_table()
    assert len(rows) == pred.lp.K + 1 and len(cols) == pred.m + 1
    np.testing.assert_allclose(pred.epochs(pred.lp.times), pred.lp.times * 100.0 / 0.2)


def test_run_follows_algorithm1(small_run):
    """Theorem 2 and Eq. (15) on the run: order, sets, jump offsets, plateaus, exponents, final norm."""
    pred, fr = small_run
    err = staircase.measure_figure1(fr)
    assert err.order_ok and err.sets_ok
    assert err.jump_err.max() < 0.5 * np.log(16) + 1
    assert np.all(err.plateau_err <= err.plateau_tol)
    assert err.tau_err.max() * 100.0 < 0.5 * np.log(16) + 1
    assert err.norm_err <= err.norm_tol and err.norm_lower_ok and err.final_loss_err < 1e-10
    assert len(fr.snaps) == 6 and 0.99 < fr.min_alignment() <= 1 + 1e-12
    cols, rows = fr.jump_table()
    assert len(rows) == pred.lp.K and fr.gd_epochs.tolist() == sorted(fr.gd_epochs.tolist())

