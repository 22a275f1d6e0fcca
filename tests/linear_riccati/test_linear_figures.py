"""The chapter's figures (stagewise.linear_riccati.figures) build from small results of every experiment."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from stagewise.linear_riccati import (data, figures, hidden_spectrum, mirror_experiments,  # noqa: E402
                                      noise_experiments, reduction, relu_teacher, sweep, whitened_experiments)


def _ok(fig):
    assert isinstance(fig, plt.Figure) and fig.axes
    plt.close(fig)


def test_every_figure_builds():
    """Figs. 1a, 4, spectrum, mirror, whitened, jump, noise and relu from tiny runs."""
    gen = torch.Generator().manual_seed(0)
    p = data.make_regression(5, 10, 3, gen)
    sig = torch.linalg.svdvals(p.beta_star).numpy()
    red = reduction.full_vs_reduced(p, [1.0, 1e-4], 20, 0.01, 200, gen)
    gauss = hidden_spectrum.gaussian_runs(p, [1e-4, 1e-2, 1e-3, 1e-3], [0.0, 0.0, 1e-2, 1e-3], 20, 0.01, 200, gen)
    _ok(figures.fig1a(red.full, gauss, sig, 10))
    _ok(figures.fig4(gauss, sig, 10))
    _ok(figures.spectrum(sweep.gamma_sweep([p], [0.01, 1.0], 0.02, 4.0), sig, 10, 0.02))
    _ok(figures.mirror(mirror_experiments.mirror_identity(p, 0.05, np.linspace(0, 1, 11), [0.01, 0.005, 0.0025])))
    sw = np.array([2.0, 1.0])
    pw, U, V = data.make_whitened(3, sw, gen)
    white = whitened_experiments.gd_vs_closed_form(pw, U, V, sw, [1.0, 0.01], [0.04, 0.02, 0.01])
    _ok(figures.whitened(white))
    _ok(figures.jump(whitened_experiments.jump_rates(sw, [2, 4], white), white))
    lngd = noise_experiments.label_noise_gd([0.0, 0.5, 1.0], 0.5, 0.05, 400, gen)
    _ok(figures.noise(lngd, noise_experiments.pure_noise_sde(3, 100, 1, 2)))
    _ok(figures.relu(relu_teacher.teacher_student(10, 5, 20, [1e-4, 1.0], 0, 1, 0.05, 200, 50)))
