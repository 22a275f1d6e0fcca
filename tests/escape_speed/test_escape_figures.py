"""Tests of ``stagewise.escape_speed.figures``: every figure of the chapter builds from small results."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from stagewise.escape_speed import deepening, digits, example1, explosion, figures, problems  # noqa: E402
from stagewise.escape_speed import gradient_descent as gd  # noqa: E402

torch.set_num_threads(1)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_figures_build():
    """Figures "rank-one", "success", "gd-success", "depth", "explosion", "escape-time" and "digits"
    (Propositions "Example 1", 3.2, 2.2; paper Figs 1-6) build from small results."""
    X, G = problems.example1_data()
    figs = [figures.rank_one_figure(example1.rank_one_scan(X, G, 801))]
    sweep = example1.ascent_width_sweep(X, G, [1, 2, 4], 3, 50, 0.1, 1e-3, gen(1))
    figs.append(figures.success_figure(sweep))
    gds = example1.gd_success(X, G, [1, 2, 4], 3, 1e-3, 0.02, gen(2))
    figs.append(figures.gd_success_figure(sweep, gds, np.random.default_rng(0)))
    st = deepening.depth_study({"Example 1": (X, G)}, [2, 3], 4, 4, 50, 0.1, 1e-3, gen(3))
    figs.append(figures.depth_figure(st, [2, 3], X))
    Xt, Yt = problems.interior_teacher(20, 5, gen(4))
    figs.append(figures.explosion_figure(explosion.aligned_flow(Xt, Yt, (2, 3), 3, 0.05, 0.2, 4, gen(5))))
    law = gd.EscapeTimeLaw({2: np.array([1e-2, 1e-3]), 3: np.array([0.04, 0.02]), 4: np.array([0.04, 0.02])},
                           {2: [1.0, 2.0], 3: [10.0, 20.0], 4: [100.0, 400.0]}, {2: 0.4, 3: -1.0, 4: -2.0})
    figs.append(figures.escape_time_figure(law))
    Xm, Ym = digits.image_data("digits", 60, gen(6))
    runs = {L: digits.train_digits(Xm, Ym, L, 6, 0.01, 20, 0.02, 1.0, 10, gen(7)) for L in (3, 2)}
    esc = {L: digits.escapes(r, (2.2, 1.5)) for L, r in runs.items()}
    figs.append(figures.digits_figure(runs, esc))
    assert all(isinstance(f, plt.Figure) for f in figs)
    plt.close("all")
