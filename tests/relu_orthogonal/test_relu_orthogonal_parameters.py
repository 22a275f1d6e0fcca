"""Tests of stagewise.relu_orthogonal.parameters: The chapter's cross-parameter validator."""
import pytest

from stagewise.core.parameters import ParameterError
from stagewise.relu_orthogonal import parameters


def test_validator_messages():
    """The chapter's cross-parameter validator: one-line ParameterError naming the parameter and what is allowed."""
    good = {"sweep_log_inv_lambdas": [25, 50, 100], "bal_etas": [0.2, 0.1], "norm_gd_log2n_max": 7,
            "norm_log2n_max": 14, "fig1_lr": 0.01, "fig1_loss_c": 2.0}
    parameters.check_parameters(good)
    for key, val, word in [("sweep_log_inv_lambdas", [25, 25, 50], "sweep_log_inv_lambdas"),
                           ("bal_etas", [0.1], "bal_etas"), ("norm_gd_log2n_max", 15, "norm_gd_log2n_max"),
                           ("fig1_lr", 0.25, "fig1_lr")]:
        with pytest.raises(ParameterError) as err:
            parameters.check_parameters({**good, key: val})
        msg = str(err.value)
        assert msg.startswith(f"parameter {word}") and "\n" not in msg and "allowed" in msg
