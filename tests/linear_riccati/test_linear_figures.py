"""The chapter's figures: data taken out of small results of every experiment (``figure_data``), drawn by pure
render functions (``figures``, no torch) from what a sidecar keeps, in the book, dark talk and poster styles."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from stagewise.core.figures import styles  # noqa: E402
from stagewise.linear_riccati import (data, figure_data, figures, gamma_sweep,  # noqa: E402
                                      hidden_spectrum, implicit_bias, mirror_experiments, noise_experiments,
                                      reduction, relu_teacher, whitened_experiments)
from figure_testing import PRESETS, assert_pure_renderers  # noqa: E402
from figure_testing import draw as _draw  # noqa: E402


@pytest.fixture(scope="module")
def every_figure():
    """(render function, its data) for the eight figures, from tiny runs of every experiment."""
    gen = torch.Generator().manual_seed(0)
    p = data.make_regression(5, 10, 3, gen)
    sig = torch.linalg.svdvals(p.beta_star).numpy()
    red = reduction.full_vs_reduced(p, [1.0, 1e-4], 20, 0.01, 200, gen)
    gauss = hidden_spectrum.gaussian_runs(p, [1e-4, 1e-2, 1e-3, 1e-3], [0.0, 0.0, 1e-2, 1e-3], 20, 0.01, 200, gen)
    sw = np.array([2.0, 1.0])
    pw, U, V = data.make_whitened(3, sw, gen)
    white = whitened_experiments.gd_vs_closed_form(pw, U, V, sw, [1.0, 0.01], [0.04, 0.02, 0.01])
    lngd = noise_experiments.label_noise_gd([0.0, 0.5, 1.0], 0.5, 0.05, 400, gen)
    mirror = mirror_experiments.mirror_identity(p, 0.05, np.linspace(0, 1, 11), [0.01, 0.005, 0.0025])
    return {
        "fig1a": (figures.fig1a, figure_data.fig1a(red.full, gauss, sig, 10)),
        "fig4": (figures.fig4, figure_data.fig4(gauss, sig, 10)),
        "spectrum": (figures.spectrum, figure_data.spectrum(gamma_sweep.gamma_sweep([p], [0.01, 1.0], 0.02, 4.0), sig,
                                                           10, 0.02)),
        "mirror": (figures.mirror, figure_data.mirror(mirror)),
        "whitened": (figures.whitened, figure_data.whitened(white)),
        "jump": (figures.jump, figure_data.jump(whitened_experiments.jump_rates(sw, [2, 4], white), white)),
        "jump_inputs": (whitened_experiments.jump_rates(sw, [2, 4], white), white),
        "noise": (figures.noise, figure_data.noise(lngd, noise_experiments.pure_noise_sde(5, 100, 1, 2))),
        "signature": (figures.signature, figure_data.signature(white, gamma_sweep.gamma_sweep(
            [p], [0.01, 1.0], 0.02, 4.0, keep=[True, True]), sig, [0.01, 1.0], 10)),
        "signature_no_sweep": (figures.signature, figure_data.signature(white, None, sig, [0.01, 1.0], 10)),
        "relu": (figures.relu, figure_data.relu(relu_teacher.teacher_student(10, 5, 20, [1e-4, 1.0], 0, 1, 0.05,
                                                                             200, 50))),
        "sigma_star": sig}


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", ["fig1a", "fig4", "spectrum", "mirror", "whitened", "jump", "noise", "relu",
                                  "signature", "signature_no_sweep"])
def test_every_figure_draws_from_its_sidecar_in_every_style(every_figure, name, preset):
    """Figs. 1a, 4, spectrum, mirror, whitened, jump, noise, relu and the signature (with and without the sweep):
    drawn from the sidecar's arrays and values,
    with no text under the preset's minimum and, on the dark preset, every text legible."""
    render, figure = every_figure[name]
    fig, style = _draw(render, figure, preset)
    assert fig.axes
    assert styles.audit(fig, style) == []
    plt.close(fig)


def test_the_closed_forms_are_in_the_data(every_figure):
    """The curves a figure draws without gradient descent are evaluated in figure_data: Corollary 3.1 on the fine
    gamma grid and its stable rank, the jump process; the SDE keeps three paths, not every path."""
    spectrum = every_figure["spectrum"][1]
    assert spectrum["theory"].shape == (200, 10)
    np.testing.assert_allclose(spectrum["theory"][7], implicit_bias.corollary_spectrum(every_figure["sigma_star"],
                                                                                        spectrum["grid"][7], 10))
    np.testing.assert_allclose(spectrum["grid_rank"], (spectrum["theory"] ** 2).sum(1) / spectrum["theory"][:, 0] ** 2)
    jump = every_figure["jump"][1]
    assert jump["closed"].shape == (2, 600, 2) and set(np.unique(jump["jump"])) <= {0.0, 1.0, 2.0, 1 / 3, 0.4}
    assert every_figure["noise"][1]["sde"]["ratio"].shape[1] == 3
    fig1a = every_figure["fig1a"][1]["panels"]["p0"]
    assert (fig1a["t"] > 0).all() and np.all(np.diff(fig1a["t"]) > 0)       # the log time axis: t > 0, increasing


def test_the_jump_figures_first_order_line_is_the_derived_rate(every_figure):
    """The right panel's straight lines are the derived first correction of the rescaled half-time,
    jump_process.rescaled_half_time_first_order, written in x = 1/ln(1/gamma): evaluated here at the gamma of each
    x > 0 and compared point by point (control: the same line with 2^s for 2s differs)."""
    import dataclasses
    from stagewise.linear_riccati.jump_process import rescaled_half_time_first_order
    jump_rates, white = every_figure["jump_inputs"]
    # singular values where 2 s and 2^s differ (the fixture's 1 and 2 are the two where they agree)
    jump = figure_data.jump(jump_rates, dataclasses.replace(white, sigma_star=np.array([3.0, 0.5])))
    xs, sig = jump["xs"][1:], jump["sigma_star"]
    expected = np.stack([rescaled_half_time_first_order(s, np.exp(-1 / xs)) for s in sig])
    np.testing.assert_allclose(jump["first_order"][:, 1:], expected, rtol=1e-12)
    np.testing.assert_allclose(jump["first_order"][:, 0], 1 / (2 * sig), rtol=1e-12)       # x = 0: the jump time
    wrong = np.stack([1 / (2 * s) + np.log(2 * s) / (2 ** s) * xs for s in sig])
    assert not np.allclose(wrong, expected, rtol=1e-3)


def test_the_render_functions_import_no_torch_and_compute_nothing():
    assert_pure_renderers(figures)
