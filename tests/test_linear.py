"""Unit tests of the linear-riccati mathematics (stagewise.linear, linear_theory, linear_noise, linear_relu)."""
import math
import warnings

import numpy as np
import pytest
import torch

from stagewise.linear_riccati import network as L
from stagewise.linear_riccati import label_noise as LN
from stagewise.linear_riccati import closed_forms as th
from stagewise.core.parameters import ParameterError
from stagewise.numerics.flows import DivergenceError

GOOD = {"n": 5, "d": 10, "k": 3, "width": 200, "d_white": 5, "k_white": 3, "sigma_min": 1.0, "sigma_max": 3.0,
        "gamma_min": 1e-4, "gamma_max": 10.0, "gammas_white": [1.0]}


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ----------------------------------------------------------------------------- validator and bad input
def test_validator_accepts_defaults():
    L.check_parameters(dict(GOOD))


@pytest.mark.parametrize("change, name", [({"n": 11}, "parameter n:"), ({"k": 11}, "parameter k:"),
                                          ({"width": 9}, "parameter width:"), ({"k_white": 6}, "parameter k_white:"),
                                          ({"sigma_min": 3.0}, "parameter sigma_min:"),
                                          ({"gamma_min": 20.0}, "parameter gamma_min:"),
                                          ({"gammas_white": []}, "parameter gammas_white:")])
def test_validator_messages(change, name):
    with pytest.raises(ParameterError) as err:
        L.check_parameters({**GOOD, **change})
    msg = str(err.value)
    assert msg.startswith(name) and "allowed" in msg and "\n" not in msg


@pytest.mark.parametrize("gamma", [0.0, -1e-3, float("nan")])
def test_gamma_must_be_positive(gamma):
    with pytest.raises(ParameterError, match="gamma"):
        L.reduced_init([1.0, gamma], 3, 1)


def test_divergence_names_eta():
    p = L.make_regression(5, 10, 3, gen())
    for compiled in (False, True):
        Z1, Z2 = L.reduced_init([1.0], 10, 3)
        with pytest.raises(DivergenceError, match="eta=5.0"):
            L.gd(p.XtX, p.XtY, Z1, Z2, 5.0, 2000, record_every=10, compiled=compiled)
        with pytest.raises(DivergenceError, match="parameter eta_white=5.0"):
            L.gd(p.XtX, p.XtY, Z1, Z2, 5.0, 2000, record_every=10, compiled=compiled, param="eta_white")


def test_non_whitened_falls_back_to_ode():
    p = L.make_regression(5, 10, 3, gen())
    t = np.linspace(0, 2, 5)
    with pytest.warns(UserWarning, match="not whitened"):
        sv, method = L.singular_value_trajectories(p, 0.1, t)
    assert method == "ode" and sv.shape == (5, 3)
    pw, _, _ = L.make_whitened(4, [2.0, 1.0], gen())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sv_w, method_w = L.singular_value_trajectories(pw, 0.1, t)
    assert method_w == "closed form"
    assert np.allclose(sv_w, th.sigma_beta(np.array([2.0, 1.0]), 0.1, t[:, None]))


# ----------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("gamma", [1.0, 1e-2, 1e-4])
def test_closed_form_matches_ode_and_paper(gamma):
    t = np.linspace(0, 8, 161)
    for s in (3.0, 1.0):
        cf = th.sigma_beta(s, gamma, t)
        assert np.abs(cf - th.sigma_beta_ode(s, gamma, t)).max() < 1e-8
        assert np.abs(cf - th.sigma_beta_paper(s, gamma, t)).max() < 1e-9
        a = th.sigma_alpha(s, gamma, t)
        assert np.allclose(cf, 2 * gamma * a / (1 - a ** 2), rtol=1e-8, atol=1e-12)


def test_closed_form_limits_and_stability():
    assert th.sigma_beta(2.0, 1e-3, 0.0) == 0.0
    assert abs(th.sigma_beta(2.0, 1e-3, 50.0) - 2.0) < 1e-12
    v = th.sigma_beta(1.0, 1e-300, np.linspace(0, 1000, 50))
    assert np.all(np.isfinite(v)) and np.all(np.diff(v) >= 0)


@pytest.mark.parametrize("gamma", [1.0, 1e-2, 1e-8])
def test_half_time_exact(gamma):
    s = np.array([3.0, 2.0, 1.0])
    t = th.half_time(s, gamma)
    assert np.allclose(th.sigma_beta(s, gamma, t), s / 2, rtol=1e-12)
    assert np.all(np.diff(t) > 0)                     # largest first


def test_jump_limit_and_rate():
    s = np.array([3.0, 1.0])
    g = 1e-60
    c = math.log(1 / g)
    tau_before, tau_after = 0.9 * th.jump_time(s), 1.1 * th.jump_time(s)
    assert np.all(th.sigma_beta(s, g, c * tau_before) < 1e-5)
    assert np.allclose(th.sigma_beta(s, g, c * tau_after), s, rtol=1e-5)
    gs = 10.0 ** -np.array([4, 8, 16])
    err = th.half_time(s[:, None], gs) / np.log(1 / gs) - th.jump_time(s)[:, None]
    assert np.allclose(err * np.log(1 / gs), (np.log(2 * s) / (2 * s))[:, None], atol=1e-4)


def test_corollary_and_variational_value():
    sig = np.array([3.0, 1.5])
    d, g = 4, 0.3
    cs = th.corollary_spectrum(sig, g, d)
    assert np.allclose(cs, np.sqrt([g + math.sqrt(g * g + 9), g + math.sqrt(g * g + 2.25), 2 * g, 2 * g]))
    beta = np.zeros((d, 2)); beta[0, 0], beta[1, 1] = sig
    M = g * np.eye(d) + np.diag(np.sqrt(g ** 2 + np.concatenate([sig, [0, 0]]) ** 2))
    W1 = np.sqrt(M)                                     # diagonal square root
    W2 = np.linalg.solve(W1, beta)
    val = th.objective(torch.from_numpy(W1)[None], torch.from_numpy(W2)[None], [g])[0]
    assert abs(val - th.variational_value(sig, g, d)) < 1e-12
    assert abs(th.stable_rank(cs) - (cs ** 2).sum() / cs[0] ** 2) < 1e-15


def test_variational_numeric_matches_closed_form():
    p = L.make_regression(3, 5, 2, gen(1))
    r = th.variational_numeric(p.X.numpy(), p.Y.numpy(), 0.5)
    V = th.variational_value(torch.linalg.svdvals(p.beta_star).numpy(), 0.5, 5)
    assert abs(r["value"] - V) / V < 1e-7 and r["beta_error"] < 1e-4


def test_mirror_potential_erratum():
    s, g = np.array([0.5, 2.0]), 0.1
    h = 1e-6
    # corrected: gradient of Psi = 1/2 tr(D asinh(D/g) - sqrt(D^2 + g^2)) is 1/2 asinh(D/g)
    psi = lambda x: 0.5 * (x * np.arcsinh(x / g) - np.sqrt(x ** 2 + g ** 2))
    assert np.allclose((psi(s + h) - psi(s - h)) / (2 * h), th.mirror_grad(s, g), atol=1e-8)
    psi_p = lambda x: 0.5 * x * np.arcsinh(x / g) - np.sqrt(x ** 2 + g ** 2)
    assert np.allclose((psi_p(s + h) - psi_p(s - h)) / (2 * h), th.mirror_grad_paper(s, g), atol=1e-8)
    assert not np.allclose(th.mirror_grad(s, g), th.mirror_grad_paper(s, g))


# ----------------------------------------------------------------------------- dynamics
def test_reduction_exact_for_gd_and_invariant_step_law():
    p = L.make_regression(4, 6, 2, gen(2))
    W1, W2, P = L.orthogonal_init([0.5, 1e-3], 6, 40, gen(3), 2)
    full = L.gd(p.XtX, p.XtY, W1, W2, 0.02, 300, record_every=50, compiled=False)
    Z1, Z2 = L.reduced_init([0.5, 1e-3], 6, 2)
    red = L.gd(p.XtX, p.XtY, Z1, Z2, 0.02, 300, record_every=50, compiled=False)
    assert (full["W1"] - red["W1"] @ P).abs().max() < 1e-12
    assert np.abs(full["sv_beta"] - red["sv_beta"]).max() < 1e-12
    # one step: Delta_{m+1} - Delta_m = eta^2 (W2 E^T E W2^T - W1^T E E^T W1)
    A, C = red["W1"], red["W2"]
    E = p.XtY - p.XtX @ A @ C
    eta = 0.02
    A2, C2 = A + eta * E @ C.transpose(-2, -1), C + eta * A.transpose(-2, -1) @ E
    inv = lambda a, c: a.transpose(-2, -1) @ a - c @ c.transpose(-2, -1)
    pred = eta ** 2 * (C @ E.transpose(-2, -1) @ E @ C.transpose(-2, -1) - A.transpose(-2, -1) @ E @ E.transpose(-2, -1) @ A)
    assert (inv(A2, C2) - inv(A, C) - pred).abs().max() < 1e-14


def test_compiled_equals_torch_loop():
    p = L.make_regression(5, 10, 3, gen(4))
    Z1, Z2 = L.reduced_init([1.0, 1e-2], 10, 3)
    a = L.gd(p.XtX, p.XtY, Z1, Z2, 0.01, 500, record_every=100, compiled=False)
    b = L.gd(p.XtX, p.XtY, Z1, Z2, 0.01, 500, record_every=100, compiled=True)
    assert np.allclose(a["t"], b["t"]) and np.abs(a["beta"] - b["beta"]).max() < 1e-12
    assert np.abs(a["sv_W1"] - b["sv_W1"]).max() < 1e-12


def test_whitened_gd_equals_mode_recursion():
    s = [2.0, 1.0]
    pw, U, V = L.make_whitened(4, s, gen(5))
    Z1, Z2 = L.reduced_init([1e-2], 4, 2)
    res = L.gd(pw.XtX, pw.XtY, Z1, Z2, 0.01, 800, record_every=100, basis=(U[:, :2].contiguous(), V),
               compiled=False)
    rec = th.whitened_mode_recursion(np.array(s), 1e-2, 0.01, 800)
    assert np.abs(res["modes"][:, 0] - rec["sigma_beta"]).max() < 1e-12
    inv_modes = torch.diagonal(U[:, :2].T @ res["inv"][0] @ U[:, :2]).numpy()
    assert np.allclose(inv_modes, rec["invariant_law"], rtol=1e-9)


def test_beta_ode_matches_z_flow_and_lemma_c10():
    p = L.make_regression(3, 5, 2, gen(6))
    t = np.linspace(0, 3, 7)
    b = L.beta_flow(p.XtX, p.XtY, 0.05, t)
    Z1, Z2 = L.z_flow(p.XtX, p.XtY, 0.05, t)
    assert (b - Z1 @ Z2).abs().max() < 1e-8
    I = torch.eye(5, dtype=torch.float64)
    c10 = Z1 @ Z1.transpose(-2, -1) - 0.05 * I - L.psd_sqrt(0.05 ** 2 * I + b @ b.transpose(-2, -1))
    assert c10.abs().max() < 1e-8


def test_crossing_time():
    t = np.linspace(0, 1, 11)
    assert abs(th.crossing_time(t, t ** 1, 0.55) - 0.55) < 1e-12
    assert math.isnan(th.crossing_time(t, t, 2.0))


# ----------------------------------------------------------------------------- noise
def test_sde_moment_recursion():
    u, v = LN.moments_discrete(3, 1e-4, 10000)
    ue, ve = LN.moments_exact(3, 1.0)
    assert abs(u[-1] / ue - 1) < 1e-3 and abs(v[-1] / ve - 1) < 1e-3
    assert LN.moments_exact(2, 0.0) == (2.0, 0.0)


def test_k1_mirror_flow_matches_beta_ode_and_rate_bound():
    p = L.make_regression(4, 6, 1, gen(7))
    t = np.linspace(0.0, 6.0, 13)
    b_dual = th.dual_flow_k1(p.XtX.numpy(), p.XtY.numpy(), 0.05, t)
    b_ode = L.beta_flow(p.XtX, p.XtY, 0.05, t)[:, :, 0].numpy()
    assert np.abs(b_dual - b_ode).max() < 1e-7
    loss = 0.5 * ((p.X.numpy() @ b_dual.T - p.Y.numpy()) ** 2).sum(0)
    bound = th.rate_bound_k1(float(torch.linalg.norm(p.beta_star)), 0.05, t[1:])
    assert np.all(loss[1:] <= bound)
    # grad psi = (gamma + s)^{-1/2} beta, checked by finite differences on the norm
    g, x, h = 0.05, 1.3, 1e-6
    assert abs((th.psi_k1(x + h, g) - th.psi_k1(x - h, g)) / (2 * h) - x / np.sqrt(g + np.sqrt(x * x + g * g))) < 1e-8
