"""The chapter's cross-parameter validator (front matter ``stagewise: validator:``)."""
import pytest

from stagewise.conservation_laws.parameters import check_parameters
from stagewise.core.parameters import ParameterError


def test_chapter_parameter_validator():
    """Orthogonal inputs need n <= d; the slope of Proposition ``prf:thm-conservation-laws-one-step``
    needs three distinct step sizes; the number of GD steps is capped."""
    good = dict(n_samples=4, input_dim=4, etas=[0.1, 0.05, 0.02], horizon=10.0)
    check_parameters(good)
    for bad, fragment in ((dict(n_samples=5), "n_samples"), (dict(etas=[0.1, 0.1, 0.05]), "etas"),
                          (dict(etas=[1e-7, 0.1, 0.2], horizon=100.0), "horizon")):
        with pytest.raises(ParameterError, match=fragment):
            check_parameters({**good, **bad})
