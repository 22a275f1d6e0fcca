"""Tests of ``stagewise.escape_speed.parameters``: the chapter's cross-parameter constraints."""
import pytest

from stagewise import ParameterError
from stagewise.escape_speed import parameters


def test_bad_parameters():
    """The validator rejects non-increasing depths (Proposition 3.2 sweep), pga_eta_final > pga_eta,
    fewer than two alphas (escape-time slope of Proposition 2.2), mnist_depth_small >= mnist_depth."""
    with pytest.raises(ParameterError, match="depths"):
        parameters.check_parameters({"depths": [3, 2]})
    with pytest.raises(ParameterError, match="pga_eta_final"):
        parameters.check_parameters({"pga_eta": 0.01, "pga_eta_final": 0.1})
    with pytest.raises(ParameterError, match="alphas"):
        parameters.check_parameters({"alphas": [0.1, 0.1]})
    with pytest.raises(ParameterError, match="mnist_depth_small"):
        parameters.check_parameters({"mnist_depth": 4, "mnist_depth_small": 4})
    parameters.check_parameters({"depths": [2, 3], "alphas": [0.1, 0.05], "mnist_depth": 6, "mnist_depth_small": 4})


def test_image_count_depends_on_the_source():
    """The digits experiment (Theorem 3.1 trend): scikit-learn's digits has 1797 images, mnist5k 5000."""
    with pytest.raises(ParameterError, match="mnist_n=1800"):
        parameters.check_parameters({"mnist_source": "digits", "mnist_n": 1800})
    parameters.check_parameters({"mnist_source": "mnist5k", "mnist_n": 1800})
