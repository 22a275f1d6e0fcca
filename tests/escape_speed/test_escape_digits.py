"""Tests of ``stagewise.escape_speed.digits``: the deep MLP on digit images (paper Figs 1, 3, 4; the trend of
Theorem 3.1 after the first escape, and the second plateau)."""
import math

import numpy as np
import pytest
import torch

from stagewise.core.run.parameters import ParameterError
from stagewise.escape_speed import digits as dg


def test_step_is_normalized_before_the_first_escape():
    """Step rule before the first escape: normalized GD, a change of clock of the homogeneous flow (Lemma "Homogeneity")."""
    assert dg.step_size(2.0, 0.5, 6, 0.01, 1e-9, escaped=False) == pytest.approx(0.01 * 2.0 / 0.5)


def test_cap_is_the_papers_law_at_depth_six():
    """Step rule after the first escape: the cap u^{-(L-2)} is the paper's 10/|theta|^4 at L = 6 (u of Proposition 2.2)."""
    theta_norm = 3.0
    capped = dg.step_size(theta_norm, 1e-12, 6, 0.01, 10 / 36, escaped=True)
    assert capped == pytest.approx(10 / theta_norm ** 4)        # paper: lr = 10 / |theta|^4


def test_cap_only_binds_when_the_gradient_is_small():
    """Step rule: the cap binds only where the gradient is small (the second saddle)."""
    assert dg.step_size(1.0, 10.0, 4, 0.01, 1.0, escaped=True) == pytest.approx(0.001)
    u = 1.0 / math.sqrt(4)
    assert dg.step_size(1.0, 1e-8, 4, 0.01, 1.0, escaped=True) == pytest.approx(u ** -2)


@pytest.mark.parametrize("source,pixels", [("digits", 64), ("mnist5k", 784)])
def test_image_data_shapes_normalization_and_seed(source, pixels):
    """Digits data (paper App. B normalization): shapes, scalar normalization, one-hot labels, seeded shuffle."""
    X, Y = dg.image_data(source, 300, torch.Generator().manual_seed(1))
    assert X.shape == (pixels, 300) and Y.shape == (10, 300)
    assert float(X.mean()) == pytest.approx(0.0, abs=1e-12) and float(X.std(unbiased=False)) == pytest.approx(1.0)
    assert torch.equal(Y.sum(0), torch.ones(300, dtype=Y.dtype))
    assert len(torch.unique(Y.argmax(0))) == 10                  # the sorted mnist5k file is shuffled
    X2, _ = dg.image_data(source, 300, torch.Generator().manual_seed(1))
    assert torch.equal(X, X2)


def test_image_data_rejects_bad_input():
    """Digits data: unknown sources and out-of-range image counts are one-line parameter errors."""
    with pytest.raises(ParameterError, match="mnist_source='cifar'"):
        dg.image_data("cifar", 10, torch.Generator())
    with pytest.raises(ParameterError, match=r"mnist_n=2000.*\[1, 1797\]"):
        dg.image_data("digits", 2000, torch.Generator())


def test_training_records_loss_time_and_spectra():
    """Digits training records loss, gradient-flow time and sorted spectra (the Theorem 3.1 trend is read off them)."""
    gen = torch.Generator().manual_seed(0)
    X, Y = dg.image_data("digits", 120, gen)
    run = dg.train_digits(X, Y, 3, 8, 0.01, 60, 0.02, 1.0, 20, gen)
    assert len(run.loss) == 61 and len(run.time) == 61
    assert list(run.steps) == [0, 20, 40, 60] and run.spectra.shape == (4, 3, 10)
    assert np.all(np.diff(run.time) > 0)
    assert run.loss[0] == pytest.approx(math.log(10), abs=1e-3)   # tiny outputs: uniform softmax
    assert np.all(np.diff(run.spectra[:, :, :8], axis=2) <= 1e-12)   # singular values sorted


def test_plateau_bookkeeping_on_a_synthetic_run():
    """Second-plateau bookkeeping (paper Figs 3, 4): escapes, censored plateaus, record lookup."""
    loss = np.array([2.3, 2.3, 2.0, 1.9, 1.9, 1.9, 1.2, 1.0])
    run = dg.DigitsRun(np.arange(0, 8, 2), loss, np.arange(8) * 0.5, np.zeros(4), np.zeros((4, 2, 3)), 0.0)
    assert dg.first_below(run, 2.1) == 2 and dg.first_below(run, 1.5, after=2) == 6
    assert dg.first_below(run, 0.5) is None
    assert dg.second_plateau(run, 2.1, 1.5) == (4, 2.0, True)
    assert dg.second_plateau(run, 2.1, 0.5) == (5, 2.5, False)      # censored at the end
    assert dg.record_at(run, 3) == 2 and dg.record_at(run, 100) == 3


def test_escapes_and_summary_on_a_synthetic_run():
    """Theorem 3.1's trend and the second plateau (paper Figs 1, 3, 4) read off the records."""
    loss = np.array([2.3, 2.3, 2.0, 1.9, 1.9, 1.9, 1.2, 1.0])
    spectra = np.zeros((4, 3, 10))
    spectra[:, :, 0], spectra[:, :, 1] = 1.0, 0.05
    deep = dg.DigitsRun(np.arange(0, 8, 2), loss, np.arange(8) * 0.5, np.zeros(4), spectra, 0.0)
    small = dg.DigitsRun(np.arange(0, 8, 2), loss, np.arange(8) * 0.5, np.zeros(4), spectra, 0.0)
    levels = (2.1, 1.5)
    esc = {6: dg.escapes(deep, levels), 4: [dg.first_below(small, 2.1), dg.first_below(small, 1.5, after=2)]}
    assert esc[6] == [2, 6]
    s = dg.summarize({6: deep, 4: small}, esc, levels, 6, 4)
    assert s.first_escape == 2 and s.ratio_deep == pytest.approx([0.05] * 3)
    assert s.plateau[6] == (4, 2.0, True) and s.ratio_small_end == pytest.approx([0.05] * 3)
    assert dg.escapes(deep, (0.1, 0.05)) == [None, None]
