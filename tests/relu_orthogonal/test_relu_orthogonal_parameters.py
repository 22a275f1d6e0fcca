"""Tests of stagewise.relu_orthogonal.parameters: the chapter's cross-parameter validator and cost model."""
import pytest

from stagewise.core.run.parameters import ParameterError
from stagewise.core.run.registry import get_chapter
from stagewise.core.run.parameters import resolve
from stagewise.relu_orthogonal import parameters

GOOD = {"sweep_log_inv_lambdas": [25, 50, 100], "bal_etas": [0.2, 0.1, 0.05], "norm_gd_log2n_max": 7,
        "norm_log2n_max": 14, "norm_seeds": 20, "fig1_lr": 0.01, "fig1_loss_c": 2.0}


def _message(values):
    with pytest.raises(ParameterError) as err:
        parameters.check_parameters(values)
    msg = str(err.value)
    assert "\n" not in msg and "allowed" in msg
    return msg


def test_validator_messages():
    """The chapter's cross-parameter validator: one-line ParameterError naming the parameter and what is allowed."""
    parameters.check_parameters(GOOD)
    for key, val, word in [("sweep_log_inv_lambdas", [25, 25, 50], "sweep_log_inv_lambdas"),
                           ("bal_etas", [0.1], "bal_etas"), ("norm_gd_log2n_max", 15, "norm_gd_log2n_max"),
                           ("fig1_lr", 0.25, "fig1_lr")]:
        assert _message({**GOOD, key: val}).startswith(f"parameter {word}")


def test_fits_need_three_points():
    """Issue 21: no fit through fewer than 3 points. Two step sizes for the drift slope, or a Theorem 3 window
    whose top is below 2^14 (thm-relu-orthogonal-sqrtn's growth test), are rejected naming the parameter; too few
    draws for the growth test's noise too."""
    assert _message({**GOOD, "bal_etas": [0.2, 0.1]}).startswith("parameter bal_etas")
    msg = _message({**GOOD, "norm_log2n_max": 13, "norm_gd_log2n_max": 7})
    assert msg.startswith("parameter norm_log2n_max") and "norm_log2n_max >= 14" in msg
    assert _message({**GOOD, "norm_log2n_max": 14, "norm_seeds": 10}).startswith("parameter norm_seeds")
    parameters.check_parameters({**GOOD, "norm_log2n_max": 14, "norm_seeds": 16})


def test_draws_are_checked_before_the_run():
    """Parameters no draw can satisfy are rejected by the validator, naming the parameter (not a crash in the run)."""
    chapter = get_chapter("relu-orthogonal")
    values = resolve(chapter.parameters, {}, chapter.name)
    parameters.check_parameters(values)
    assert _message({**values, "fig1_log_inv_lambda": 30.0}).startswith("parameter fig1_log_inv_lambda")


def test_expected_seconds_grows_with_cost_parameters():
    """The cost model (its ratio to the default is what the run command shows), growing with the parameters that
    drive the cost (Monte Carlo trials, sweep draws, Figure 1 steps, norm window, widths); too long is rejected."""
    chapter = get_chapter("relu-orthogonal")
    values = resolve(chapter.parameters, {}, chapter.name)
    base = parameters.expected_seconds(values)
    assert base > 0 and chapter.front_matter["expected_seconds"] > 0   # the shown seconds are anchored to the latter
    for key, val in [("mc_trials", 40000), ("sweep_seeds", 32), ("fig1_log_inv_lambda", 4000.0), ("fig1_lr", 0.001),
                     ("norm_log2n_max", 16), ("width_gd_widths", [256, 4096]), ("bal_etas", [0.01, 0.005, 0.002])]:
        assert parameters.expected_seconds({**values, key: val}) > base + 1, key
    msg = _message({**values, "fig1_lr": 1e-5, "fig1_n": 256, "fig1_m": 32})
    assert msg.startswith("parameter fig1_lr") and "min" in msg
