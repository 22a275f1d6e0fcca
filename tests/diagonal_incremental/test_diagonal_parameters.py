"""The chapter's cross-parameter validator (front matter ``stagewise: validator:``)."""
import pytest

from stagewise.core.run.parameters import ParameterError
from stagewise.diagonal_incremental import parameters


def test_check_parameters_messages():
    """Extrapolation in 1/log(1/alpha) needs >= 3 alphas, one <= 1e-16; the toy teacher fits d = 10."""
    ok = {"alphas_flow": [1e-8, 1e-16, 1e-32], "teacher_kq": 2, "teacher_vo": 2, "scale": "toy"}
    parameters.check_parameters(ok)
    for bad, word in (({"alphas_flow": [1e-8, 1e-16]}, "alphas_flow"),
                      ({"alphas_flow": [1e-4, 1e-6, 1e-8]}, "alphas_flow"),
                      ({"teacher_kq": 5, "teacher_vo": 5}, "teacher_kq")):
        with pytest.raises(ParameterError, match=f"parameter {word}") as e:
            parameters.check_parameters({**ok, **bad})
        assert "\n" not in str(e.value)


def test_expected_seconds_grows_with_the_cost_drivers():
    """The cost model (its ratio to the default is what the run command shows, anchored to the measured default):
    more for smaller alphas, a smaller step size, a smaller full-head init and the paper's size."""
    base = parameters.expected_seconds({})
    assert base > 0
    for change in ({"alphas_flow": [1e-8, 1e-16, 1e-32, 1e-64, 1e-128, 1e-256]}, {"eta": 0.002},
                   {"scale": "paper"}):
        assert parameters.expected_seconds(change) > 1.2 * base, change
    for change in ({"alphas_gd": [0.1, 1e-8]}, {"full_alpha": 1e-12}):
        assert parameters.expected_seconds(change) > base, change
