"""Tests of ``stagewise.escape_speed.parameters``: the chapter's cross-parameter constraints."""
import pytest

from stagewise import ParameterError
from stagewise.escape_speed import parameters


def test_bad_parameters():
    """The validator rejects non-increasing depths (Proposition 3.2 sweep), pga_eta_final > pga_eta,
    fewer than two alphas (escape-time slope of Proposition 2.2), mnist_depth_small >= mnist_depth."""
    with pytest.raises(ParameterError, match="depths"):
        parameters.check_parameters({"depths": [3, 2]})
    with pytest.raises(ParameterError, match="ex1_widths"):
        parameters.check_parameters({"ex1_widths": [32, 1, 4]})
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


def test_expected_seconds_grows_with_the_cost_driving_parameters():
    """The cost model behind the run command's expected-time message (issue 21, item 6)."""
    import yaml
    from stagewise.core.run.registry import get_chapter
    base = parameters.expected_seconds({})
    for name, value in (("pga_steps", 20000), ("ex1_restarts", 240), ("ex1_widths", [1, 2, 4, 8, 16, 32, 64, 128]),
                        ("depth_steps", 8000), ("depths", [2, 3, 4, 5, 6, 7, 8]), ("depth_width", 48),
                        ("depth_restarts", 96), ("rel_step", 0.001), ("gd_inits", 160), ("gd_width", 64),
                        ("ex1_gd_inits", 160), ("mnist_steps", 40000), ("mnist_n", 1797), ("mnist_width", 200),
                        ("mnist_depth", 12), ("mnist_source", "mnist5k")):
        assert parameters.expected_seconds({name: value}) > base + 2, name
    # at the defaults: the measured 48 s of one run alone (notebook), plus start; the front matter's figure is for
    # two chapters at once on the 2 cores (stagewise book --jobs), about twice that
    assert 40 <= base <= 70
    assert get_chapter("escape-speed").front_matter["expected_seconds"] > 0   # the shown seconds are anchored to it
