"""Mirror flows (stagewise.linear_riccati.mirror_flow): Theorem 3.2(a) with the corrected potential
(thm-linear-riccati-mirror, erratum 1) and the k = 1 flow with Lemma C.8 (thm-linear-riccati-mirror, part (b))."""
import numpy as np
import torch

from stagewise.linear_riccati import data, gradient_flow, mirror_flow


def test_mirror_potential_erratum():
    """Theorem 3.2(a): the corrected potential's gradient is 1/2 asinh(sigma/gamma); the printed one differs."""
    s, g = np.array([0.5, 2.0]), 0.1
    h = 1e-6
    # corrected: gradient of Psi = 1/2 tr(D asinh(D/g) - sqrt(D^2 + g^2)) is 1/2 asinh(D/g)
    psi = lambda x: 0.5 * (x * np.arcsinh(x / g) - np.sqrt(x ** 2 + g ** 2))
    assert np.allclose((psi(s + h) - psi(s - h)) / (2 * h), mirror_flow.mirror_grad(s, g), atol=1e-8)
    psi_p = lambda x: 0.5 * x * np.arcsinh(x / g) - np.sqrt(x ** 2 + g ** 2)
    assert np.allclose((psi_p(s + h) - psi_p(s - h)) / (2 * h), mirror_flow.mirror_grad_paper(s, g), atol=1e-8)
    assert not np.allclose(mirror_flow.mirror_grad(s, g), mirror_flow.mirror_grad_paper(s, g))


def test_k1_mirror_flow_matches_beta_ode_and_rate_bound():
    """Theorem 3.2(b): the dual k = 1 flow equals the beta-ODE; Lemma C.8's 1/t bound holds; grad psi is right."""
    p = data.make_regression(4, 6, 1, torch.Generator().manual_seed(7))
    t = np.linspace(0.0, 6.0, 13)
    b_dual = mirror_flow.dual_flow_k1(p.XtX.numpy(), p.XtY.numpy(), 0.05, t)
    b_ode = gradient_flow.beta_flow(p.XtX, p.XtY, 0.05, t)[:, :, 0].numpy()
    assert np.abs(b_dual - b_ode).max() < 1e-7
    loss = 0.5 * ((p.X.numpy() @ b_dual.T - p.Y.numpy()) ** 2).sum(0)
    bound = mirror_flow.rate_bound_k1(float(torch.linalg.norm(p.beta_star)), 0.05, t[1:])
    assert np.all(loss[1:] <= bound)
    # grad psi = (gamma + s)^{-1/2} beta, checked by finite differences on the norm
    g, x, h = 0.05, 1.3, 1e-6
    assert abs((mirror_flow.psi_k1(x + h, g) - mirror_flow.psi_k1(x - h, g)) / (2 * h)
               - x / np.sqrt(g + np.sqrt(x * x + g * g))) < 1e-8


def test_unwarped_dual_flow_differs():
    """warp=False drops the time warp of Theorem 3.2(b): another trajectory, same start."""
    import numpy as np
    import torch
    from stagewise.linear_riccati import data, mirror_flow
    p = data.make_regression(3, 5, 1, torch.Generator().manual_seed(9))
    t = np.linspace(0.0, 2.0, 5)
    a = mirror_flow.dual_flow_k1(p.XtX.numpy(), p.XtY.numpy(), 0.1, t)
    b = mirror_flow.dual_flow_k1(p.XtX.numpy(), p.XtY.numpy(), 0.1, t, warp=False)
    assert np.abs(a - b).max() > 1e-3 and np.abs(a[0] - b[0]).max() == 0.0
