"""The chapter's cross-parameter validator (front matter ``stagewise: validator:``)."""
import pytest

from stagewise.core.parameters import ParameterError
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
