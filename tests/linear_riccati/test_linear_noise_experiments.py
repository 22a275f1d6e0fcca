"""Section 4 experiments (stagewise.linear_riccati.noise_experiments): label-noise GD (Fig. 1b) and the
pure-noise SDE of Proposition 4.1 (thm-linear-riccati-noise)."""
import numpy as np
import pytest
import torch

from stagewise.linear_riccati import noise_experiments


def test_label_noise_gd():
    """GD keeps the bottom sigma(W1) at sqrt(2 gamma) exactly; label noise makes them decay."""
    run = noise_experiments.label_noise_gd([0.0, 1.0], 0.5, 0.05, 4000, torch.Generator().manual_seed(8))
    assert run.gd_bottom < 1e-10 and len(run.rates) == 1 and run.rates[0] > 0
    assert run.sv.shape[1:] == (2, 5) and run.n_needed == int(np.ceil(4 * np.log(10) / 0.05 ** 2))
    assert run.lngd_bottom < 1.0 and abs(run.top_theory - np.sqrt(0.5 + np.sqrt(1.25))) < 1e-15


def test_pure_noise_sde_is_reproducible():
    """Proposition 4.1(a): Monte Carlo moments within a few standard errors; same seeds give the same paths."""
    a = noise_experiments.pure_noise_sde(5, 400, paths_seed=2**62 + 11, moments_seed=3)
    b = noise_experiments.pure_noise_sde(5, 400, paths_seed=2**62 + 11, moments_seed=3)
    assert np.array_equal(a.ratio, b.ratio) and a.moment_z == b.moment_z
    assert a.moment_z < 5 and a.em_vs_exact < 1e-2 and a.ratio.shape == (len(a.t), 5)


def test_noise_controls():
    """Controls: label noise moves the bottom values, GD (noise off) neither pushes them down nor decays;
    frozen paths and uncoupled noise fail the SDE criteria."""
    run = noise_experiments.label_noise_gd([0.0, 1.0], 0.5, 0.05, 4000, torch.Generator().manual_seed(8))
    assert noise_experiments.bottom_deviation(run, 1) > 0.1
    assert abs(noise_experiments.bottom_at_needed(run, 0) - 1) < 1e-10
    assert abs(noise_experiments.decay_rate(run, 0, 1.0)) < 1e-6
    assert noise_experiments.bottom_deviation(run, 0) == run.gd_bottom
    sde = noise_experiments.pure_noise_sde(20, 400, paths_seed=1, moments_seed=3)
    assert noise_experiments.moment_z(sde, "frozen") > 4 and noise_experiments.moment_z(sde) == sde.moment_z
    assert noise_experiments.uncoupled_ratio_drop(sde) < 10 and noise_experiments.uncoupled_comm_drop(sde) < 10
    ratio_drop, comm_drop = noise_experiments.uncoupled_drops(2, 200, np.linspace(0.0, 30.0, 61), seed=5)
    assert ratio_drop < 10 and comm_drop < 10


def test_median_drop_interval_over_paths():
    """The bootstrap interval of a median drop brackets the point estimate; the uncoupled control stays near 1."""
    sde = noise_experiments.pure_noise_sde(60, 400, paths_seed=4, moments_seed=3)
    lo, hi = noise_experiments.median_drop_interval(sde.ratio, sde.t, seed=4)
    assert lo <= sde.ratio_drop <= hi and lo == noise_experiments.drop_low(sde, "ratio")
    assert noise_experiments.drop_low(sde, "comm", coupled=False) < 2 and noise_experiments.drop_low(sde, "ratio") > 10
    ratio_u, comm_u = noise_experiments.uncoupled_paths(2, 60, sde.t, 4)
    assert ratio_u.shape == comm_u.shape == (len(sde.t), 60)


def test_half_variance_control_and_bottom_at_step():
    """The decay-rate rows' control (thm-linear-riccati-noise): label noise at delta/sqrt(2), extrapolated to
    eta -> 0 and read with the heuristic of delta, decays at about half the rate; the bottom value at a step is read
    from the first record at or after it."""
    gen = torch.Generator().manual_seed(0)
    run = noise_experiments.label_noise_gd([0.0, 1.0], gamma=0.5, eta=0.05, steps=4000, generator=gen)
    half = noise_experiments.half_variance_rate(run, 1.0, torch.Generator().manual_seed(1))
    assert 0.35 < half < 0.65
    assert noise_experiments.bottom_at_step(run, 0, 1000) == pytest.approx(1.0, abs=1e-12)
    assert noise_experiments.bottom_at_step(run, 1, 10 ** 9) == run.sv[-1, 1, 1:].max() / 1.0


def test_decay_rate_extrapolated_to_small_steps():
    """The heuristic eta^2 delta^2 / 2 is the eta -> 0 limit of the decay rate: at eta = 0.05, delta = 1 the rate
    is about a quarter lower (first order in eta), at eta/2 about half as much lower, and the Richardson
    extrapolation 2 r(eta/2) - r(eta) is within 0.1 of the heuristic; the eta/2 run uses the same data."""
    gen = torch.Generator().manual_seed(2)
    run = noise_experiments.label_noise_gd([0.0, 0.5, 1.0], gamma=0.5, eta=0.05, steps=4000, generator=gen)
    rates = noise_experiments.decay_rates(run, gen)
    assert rates.deltas == [0.5, 1.0] and rates.at_eta == run.rates
    assert rates.at_eta[1] < rates.at_half[1] < 0.95 and rates.at_eta[1] < 0.85
    assert all(abs(r - 1) < 0.1 for r in rates.extrapolated)
    assert rates.extrapolated == [2 * h - c for c, h in zip(rates.at_eta, rates.at_half)]
