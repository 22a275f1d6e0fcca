"""The pure-noise SDE (stagewise.linear_riccati.noise_sde): Proposition 4.1(a) (thm-linear-riccati-noise)."""
from stagewise.linear_riccati import noise_sde


def test_sde_moment_recursion():
    """The Euler-Maruyama moment recursion converges to d cosh(sqrt(d) t), sqrt(d) sinh(sqrt(d) t)."""
    u, v = noise_sde.moments_discrete(3, 1e-4, 10000)
    ue, ve = noise_sde.moments_exact(3, 1.0)
    assert abs(u[-1] / ue - 1) < 1e-3 and abs(v[-1] / ve - 1) < 1e-3
    assert noise_sde.moments_exact(2, 0.0) == (2.0, 0.0)
