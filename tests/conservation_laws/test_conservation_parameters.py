"""The chapter's cross-parameter validator (front matter ``stagewise: validator:``)."""
import pytest

from stagewise.conservation_laws.parameters import check_parameters
from stagewise.core.run.parameters import ParameterError


def test_chapter_parameter_validator():
    """Orthogonal inputs need n <= d; the slope of Proposition ``prf:thm-conservation-laws-one-step``
    needs three distinct step sizes; the number of GD steps is capped."""
    good = dict(n_samples=4, input_dim=4, etas=[0.1, 0.05, 0.02], horizon=10.0)
    check_parameters(good)
    for bad, fragment in ((dict(n_samples=5), "n_samples"), (dict(etas=[0.1, 0.1, 0.05]), "etas"),
                          (dict(etas=[1e-7, 0.1, 0.2], horizon=100.0), "horizon")):
        with pytest.raises(ParameterError, match=fragment):
            check_parameters({**good, **bad})


def test_expected_seconds_is_the_front_matter_time_at_defaults_and_grows_with_the_cost():
    """The cost model (its ratio to the default is what the run command shows, anchored to the measured default); more steps, seeds, samples, widths, depth,
    a longer horizon or a tighter solver cost more."""
    from stagewise.conservation_laws.parameters import expected_seconds
    from stagewise.core.run.registry import get_chapter
    chapter = get_chapter("conservation-laws")
    defaults = dict(etas=[0.04, 0.02, 0.01, 0.005], horizon=10.0, n_seeds=3, n_samples=12, input_dim=12, width=8,
                    depth=4, init_scale=0.5, ode_rtol=1e-10, device="auto", seed=0)
    base = expected_seconds(defaults)
    assert base > 0 and chapter.front_matter["expected_seconds"] > 0   # the seconds shown are anchored to the latter
    for name, value in (("horizon", 40.0), ("n_seeds", 12), ("n_samples", 12 * 4), ("width", 64),
                        ("etas", [0.04, 0.02, 0.01, 0.001]), ("ode_rtol", 1e-13)):
        bigger = dict(defaults, **{name: value}, input_dim=max(12, value if name == "n_samples" else 12))
        assert expected_seconds(bigger) > 1.05 * base, name
    wide = dict(defaults, width=64)            # depth costs through the width x width layers
    assert expected_seconds(dict(wide, depth=12)) > 1.5 * expected_seconds(wide)
