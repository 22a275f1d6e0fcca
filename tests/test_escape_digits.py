"""Unit tests for the digits experiment of the escape-speed chapter (stagewise.escape_digits)."""
import math

import numpy as np
import pytest
import torch

from stagewise.escape_speed import speed as esc
from stagewise.escape_speed import digits as dg
from stagewise.core.parameters import ParameterError


def test_step_is_normalized_before_the_first_escape():
    assert dg.step_size(2.0, 0.5, 6, 0.01, 1e-9, escaped=False) == pytest.approx(0.01 * 2.0 / 0.5)


def test_cap_is_the_papers_law_at_depth_six():
    theta_norm = 3.0
    capped = dg.step_size(theta_norm, 1e-12, 6, 0.01, 10 / 36, escaped=True)
    assert capped == pytest.approx(10 / theta_norm ** 4)        # paper: lr = 10 / |theta|^4


def test_cap_only_binds_when_the_gradient_is_small():
    assert dg.step_size(1.0, 10.0, 4, 0.01, 1.0, escaped=True) == pytest.approx(0.001)
    u = 1.0 / math.sqrt(4)
    assert dg.step_size(1.0, 1e-8, 4, 0.01, 1.0, escaped=True) == pytest.approx(u ** -2)


@pytest.mark.parametrize("source,pixels", [("digits", 64), ("mnist5k", 784)])
def test_image_data_shapes_normalization_and_seed(source, pixels):
    X, Y = dg.image_data(source, 300, torch.Generator().manual_seed(1))
    assert X.shape == (pixels, 300) and Y.shape == (10, 300)
    assert float(X.mean()) == pytest.approx(0.0, abs=1e-12) and float(X.std(unbiased=False)) == pytest.approx(1.0)
    assert torch.equal(Y.sum(0), torch.ones(300, dtype=Y.dtype))
    assert len(torch.unique(Y.argmax(0))) == 10                  # the sorted mnist5k file is shuffled
    X2, _ = dg.image_data(source, 300, torch.Generator().manual_seed(1))
    assert torch.equal(X, X2)


def test_image_data_rejects_bad_input():
    with pytest.raises(ParameterError, match="mnist_source='cifar'"):
        dg.image_data("cifar", 10, torch.Generator())
    with pytest.raises(ParameterError, match=r"mnist_n=2000.*\[1, 1797\]"):
        dg.image_data("digits", 2000, torch.Generator())
    with pytest.raises(ParameterError, match="mnist_n=1800"):
        esc.check_parameters({"mnist_source": "digits", "mnist_n": 1800})
    esc.check_parameters({"mnist_source": "mnist5k", "mnist_n": 1800})


def test_training_records_loss_time_and_spectra():
    gen = torch.Generator().manual_seed(0)
    X, Y = dg.image_data("digits", 120, gen)
    run = dg.train_digits(X, Y, 3, 8, 0.01, 60, 0.02, 1.0, 20, gen)
    assert len(run.loss) == 61 and len(run.time) == 61
    assert list(run.steps) == [0, 20, 40, 60] and run.spectra.shape == (4, 3, 10)
    assert np.all(np.diff(run.time) > 0)
    assert run.loss[0] == pytest.approx(math.log(10), abs=1e-3)   # tiny outputs: uniform softmax
    assert np.all(np.diff(run.spectra[:, :, :8], axis=2) <= 1e-12)   # singular values sorted


def test_plateau_bookkeeping_on_a_synthetic_run():
    loss = np.array([2.3, 2.3, 2.0, 1.9, 1.9, 1.9, 1.2, 1.0])
    run = dg.DigitsRun(np.arange(0, 8, 2), loss, np.arange(8) * 0.5, np.zeros(4), np.zeros((4, 2, 3)), 0.0)
    assert dg.first_below(run, 2.1) == 2 and dg.first_below(run, 1.5, after=2) == 6
    assert dg.first_below(run, 0.5) is None
    assert dg.second_plateau(run, 2.1, 1.5) == (4, 2.0, True)
    assert dg.second_plateau(run, 2.1, 0.5) == (5, 2.5, False)      # censored at the end
    assert dg.record_at(run, 3) == 2 and dg.record_at(run, 100) == 3
