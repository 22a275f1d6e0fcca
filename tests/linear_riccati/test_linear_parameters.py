"""Parameter constraints (stagewise.linear_riccati.parameters): the front-matter validator, and gamma > 0 of the
I_gamma initialization (Definition thm-linear-riccati-init)."""
import pytest

from stagewise.core.parameters import ParameterError
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
