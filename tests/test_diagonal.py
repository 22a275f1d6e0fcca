"""Unit tests for Algorithm 1 and the diagonal-network dynamics (stagewise.diagonal, stagewise.diagonal_flow)."""
import math

import numpy as np
import pytest
import torch

from stagewise import ParameterError
from stagewise.diagonal_incremental import algorithm as D
from stagewise.diagonal_incremental import flow as F

f64 = torch.float64


def linear(sigma, beta_star):
    return D.LinearDiagonal(torch.tensor(sigma, dtype=f64), torch.tensor(beta_star, dtype=f64))


CORR = [[1, .2, .75], [.2, 1, .75], [.75, .75, 1]]


def test_orthogonal_closed_form():
    bs = [0.9, -0.5, 0.3, 0.0, -0.15]
    stages = D.algorithm1(linear(np.eye(5), bs))
    T, order, losses = D.closed_form_orthogonal(np.array(bs))
    assert [s.T for s in stages[1:]] == pytest.approx(T, rel=1e-12)
    assert [s.coordinate for s in stages[1:]] == order
    assert [s.sign for s in stages[1:]] == [int(np.sign(bs[i])) for i in order]
    assert [s.loss for s in stages] == pytest.approx(losses, abs=1e-12)
    assert T == pytest.approx([1 / 0.9, 2.0, 1 / 0.3, 1 / 0.15])
    # theta^k is beta* restricted to the top-k entries; b bookkeeping ends in {0, 2} on the support
    np.testing.assert_allclose(stages[2].beta, [0.9, -0.5, 0, 0, 0], atol=1e-10)
    assert set(stages[-1].b[stages[-1].support]) <= {0.0, 2.0}


def test_correlated_support_shrink_and_sign_flip():
    stages = D.algorithm1(linear(CORR, [1.0, 0.6, -0.3]))
    assert [(s.coordinate, s.sign) for s in stages[1:]] == [(2, 1), (0, 1), (1, 1), (2, -1)]
    assert [s.T for s in stages[1:]] == pytest.approx([1 / 0.9, 1.1363636, 5.5555556, 112.2222222], rel=1e-6)
    assert stages[3].dropped == [2]                       # x3 leaves the support at stage 3 ...
    assert stages[4].beta[2] < 0 < stages[2].beta[2]      # ... and re-enters with flipped sign (Lemma D.4)
    np.testing.assert_allclose(stages[-1].beta, [1.0, 0.6, -0.3], atol=1e-8)
    assert all(s.hessian_min > 0 for s in stages[1:])


def test_bookkeeping_b_reenters_after_two_over_g():
    stages = D.algorithm1(linear(CORR, [1.0, 0.6, -0.3]))
    g3 = float(D.LinearDiagonal(torch.tensor(CORR, dtype=f64), torch.tensor([1.0, .6, -.3], dtype=f64))
               .g(torch.from_numpy(stages[3].beta)[None])[0, 2])
    assert stages[4].T - stages[3].T == pytest.approx(2 / abs(g3), rel=1e-8)


def test_tie_is_reported_with_stage():
    with pytest.raises(D.DegenerateStageError, match="stage 1: tie"):
        D.algorithm1(linear(np.eye(2), [0.5, -0.5]))
    with pytest.raises(D.DegenerateStageError, match="stage 2: tie"):
        D.algorithm1(linear(np.eye(3), [0.9, 0.4, 0.4]))


def test_nonconvergent_stage_is_reported():
    model = linear(np.eye(2), [0.9, 0.4])
    with pytest.raises(D.DegenerateStageError, match="stage 1: nonlinear stage"):
        D.train_active(model, np.array([1e-8, 0.0]), np.array([0]), t_max=1.0, stage=1)


def test_attention_gradient_matches_autograd_and_first_stage_is_vo():
    model, beta_star = D.make_teacher_problem(20, 4, 5, 1, 2, seed=3)
    beta = torch.randn(3, 10, dtype=f64, generator=torch.Generator().manual_seed(0)) * 0.5
    np.testing.assert_allclose(model.g(beta).numpy(), D.DiagonalModel.g(model, beta).numpy(), atol=1e-12)
    np.testing.assert_allclose(model.g_torch(beta).numpy(), D.DiagonalModel.g(model, beta).numpy(), atol=1e-12)
    g0 = model.g(torch.zeros(1, 10, dtype=f64))[0]
    assert torch.all(g0[:5] == 0)        # key-query gradient vanishes at beta = 0 (uniform attention, c = 0)
    assert model.loss(beta_star[None])[0] < 1e-28


def test_normalize_init_and_weights_from_b():
    rng = np.random.default_rng(1)
    u0, v0 = rng.standard_normal(6), rng.standard_normal(6)
    un, vn = F.normalize_init(u0, v0)
    np.testing.assert_allclose(un * vn, u0 * v0)
    assert np.all(un > np.abs(vn))
    L = math.log(1e20)
    b0 = 1 + np.log(un + vn) / -L
    u, v = F.weights_from_b(b0, L, u0, v0)
    np.testing.assert_allclose(u * v, 1e-40 * u0 * v0, rtol=1e-10)
    with pytest.raises(ValueError):
        F.normalize_init(np.array([1.0]), np.array([-1.0]))


def test_log_scale_flow_orthogonal_transition_times():
    bs = [0.9, -0.5, 0.3]
    model = linear(np.eye(3), bs)
    T, _, losses = D.closed_form_orthogonal(np.array(bs))
    tau = np.linspace(0, 4.0, 801)
    alphas = [1e-16, 1e-64, 1e-256]
    out = F.log_scale_flow(model, alphas, np.array([1.0, 0.7, -1.2]), np.array([0.3, -0.2, 0.5]), tau, rtol=1e-10,
                           batched=True)
    for j, a in enumerate(alphas):
        tt = F.transition_times(tau, out["loss"][:, j], losses,
                                lambda t: float(model.loss(out["dense"](t)[j:j + 1])[0]))
        # error ~ C / log(1/alpha) with C = O(1): check at that scale
        assert np.max(np.abs(np.array(tt) - T)) < 5.0 / -math.log(a)
    one_by_one = F.log_scale_flow(model, alphas, np.array([1.0, 0.7, -1.2]), np.array([0.3, -0.2, 0.5]), tau,
                                  rtol=1e-10, batched=False)
    np.testing.assert_allclose(one_by_one["loss"], out["loss"], atol=1e-6)
    x = np.array([F.transition_times(tau, out["loss"][:, j], losses,
                                     lambda t: float(model.loss(out["dense"](t)[j:j + 1])[0])) for j in range(3)])
    for k in range(3):
        assert F.richardson(alphas, x[:, k]) == pytest.approx(T[k], rel=2e-3)


def test_gd_identity_exact_to_rounding():
    model = linear(CORR, [1.0, 0.6, -0.3])
    rng = np.random.default_rng(0)
    u0, v0 = rng.standard_normal(3), rng.standard_normal(3)
    out = F.gradient_descent(model, u0, v0, alphas=[1e-2, 1e-2], etas=[0.1, 0.05], n_steps=2000)
    err = np.abs(out["c"] - out["c_pred"])
    assert np.all(err <= 8 * 2000 * np.finfo(float).eps * out["scale"])
    drift = np.abs(out["c"] / out["c0"] - 1).max(axis=1)
    assert drift[0] > 1e-4 and drift[1] < drift[0]      # conservation is violated at O(eta) by GD


def test_gd_divergence_names_parameter():
    model = linear(np.eye(2), [5.0, 3.0])
    with pytest.raises(ParameterError, match="parameter eta"):
        F.gradient_descent(model, np.array([1.0, 2.0]), np.array([0.5, 0.1]), [0.5], [5.0], 200)


def test_check_parameters_messages():
    ok = {"alphas_flow": [1e-8, 1e-16, 1e-32], "teacher_kq": 2, "teacher_vo": 2, "scale": "toy"}
    D.check_parameters(ok)
    for bad, word in (({"alphas_flow": [1e-8, 1e-16]}, "alphas_flow"),
                      ({"alphas_flow": [1e-4, 1e-6, 1e-8]}, "alphas_flow"),
                      ({"teacher_kq": 5, "teacher_vo": 5}, "teacher_kq")):
        with pytest.raises(ParameterError, match=f"parameter {word}") as e:
            D.check_parameters({**ok, **bad})
        assert "\n" not in str(e.value)


def test_richardson_recovers_limit():
    alphas = np.array([1e-8, 1e-16, 1e-32])
    L = -np.log(alphas)
    assert F.richardson(alphas, 2.0 + 3.0 / L - 4.0 / L ** 2) == pytest.approx(2.0, abs=1e-12)
