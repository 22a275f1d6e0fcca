"""Parameter constraints (stagewise.linear_riccati.parameters): the front-matter validator, and gamma > 0 of the
I_gamma initialization (Definition thm-linear-riccati-init)."""
import pytest

from stagewise.core.run.parameters import ParameterError
from stagewise.linear_riccati import initialization, parameters

GOOD = {"n": 5, "d": 10, "k": 3, "width": 200, "d_white": 5, "k_white": 3, "sigma_min": 1.0, "sigma_max": 3.0,
        "gamma_min": 1e-4, "gamma_max": 10.0, "gammas_white": [1.0]}


def test_validator_accepts_defaults():
    """The chapter's defaults satisfy every cross-parameter constraint."""
    parameters.check_parameters(dict(GOOD))


@pytest.mark.parametrize("change, name", [({"n": 11}, "parameter n:"), ({"k": 11}, "parameter k:"),
                                          ({"width": 9}, "parameter width:"), ({"k_white": 6}, "parameter k_white:"),
                                          ({"sigma_min": 3.0}, "parameter sigma_min:"),
                                          ({"gamma_min": 20.0}, "parameter gamma_min:"),
                                          ({"gammas_white": []}, "parameter gammas_white:")])
def test_validator_messages(change, name):
    """Each violated constraint gives a one-line ParameterError naming the parameter and what is allowed."""
    with pytest.raises(ParameterError) as err:
        parameters.check_parameters({**GOOD, **change})
    msg = str(err.value)
    assert msg.startswith(name) and "allowed" in msg and "\n" not in msg


@pytest.mark.parametrize("gamma", [0.0, -1e-3, float("nan")])
def test_gamma_must_be_positive(gamma):
    """Definition thm-linear-riccati-init needs gamma > 0 (gamma = 0 is a saddle)."""
    with pytest.raises(ParameterError, match="gamma"):
        initialization.reduced_init([1.0, gamma], 3, 1)


def test_whitened_step_limit():
    """eta_white * 2 sqrt(sigma_max^2 + max(gammas_white)^2) must not exceed 1 (GD on whitened data oscillates)."""
    parameters.check_parameters({**GOOD, "eta_white": 0.004})
    with pytest.raises(ParameterError) as err:
        parameters.check_parameters({**GOOD, "eta_white": 0.1, "sigma_max": 8.0})
    msg = str(err.value)
    assert msg.startswith("parameter eta_white:") and "allowed" in msg and "\n" not in msg


def test_expected_seconds_cost_model():
    """Grows with every cost-driving parameter (the run command shows its ratio to the default, anchored to
    the measured default in the front matter)."""
    base = parameters.expected_seconds({})
    assert base > 0
    for change in ({"eta": 0.005}, {"width": 2000}, {"n_gamma": 22}, {"n_seeds": 4}, {"d": 40, "width": 400},
                   {"eta_white": 0.002}, {"gammas_white": [1.0, 0.1, 0.01, 1e-4, 1e-8, 1e-12]}, {"d_white": 40},
                   {"noise_steps": 40000}, {"sde_paths": 1000}, {"mc_paths": 40000}, {"relu_seeds": 6},
                   {"relu_steps": 60000}, {"sigma_min": 0.1}, {"horizon": 500.0}):
        assert parameters.expected_seconds(change) > base, change
