"""The jump process (stagewise.linear_riccati.jump_process): Theorem thm-linear-riccati-jump and its derived rate."""
import math

import numpy as np

from stagewise.linear_riccati import jump_process, riccati


def test_jump_limit_and_rate():
    """sigma_beta(ln(1/gamma) tau) -> s 1(tau > 1/(2s)), with error ln(2s)/(2s) / ln(1/gamma) in the half-time."""
    s = np.array([3.0, 1.0])
    g = 1e-60
    c = math.log(1 / g)
    tau_before, tau_after = 0.9 * jump_process.jump_time(s), 1.1 * jump_process.jump_time(s)
    assert np.all(riccati.sigma_beta(s, g, c * tau_before) < 1e-5)
    assert np.allclose(riccati.sigma_beta(s, g, c * tau_after), s, rtol=1e-5)
    gs = 10.0 ** -np.array([4, 8, 16])
    err = riccati.half_time(s[:, None], gs) / np.log(1 / gs) - jump_process.jump_time(s)[:, None]
    assert np.allclose(err * np.log(1 / gs), (np.log(2 * s) / (2 * s))[:, None], atol=1e-4)


def test_half_time_remainder_is_first_order_in_gamma():
    """Derived rate of thm-linear-riccati-jump: t_1/2 - ln(2s/gamma)/(2s) = -gamma/(2 s^2) + O(gamma^2 ln); by hand,
    -5.0e-3 at gamma = 1e-2 and -5.0e-5 at 1e-4 (s = 1)."""
    for g, expected in ((1e-2, -5.0e-3), (1e-4, -5.0e-5)):
        rem = jump_process.half_time_remainder(1.0, g, riccati.half_time(1.0, g))
        assert abs(rem - expected) < 0.01 * abs(expected)
    for s in (0.5, 1.0, 3.0):
        for g in (1e-1, 1e-2, 1e-4, 1e-8, 1e-32):
            t = riccati.half_time(s, g)
            rem = jump_process.half_time_remainder(s, g, t)
            assert abs(rem - jump_process.remainder_first_order(s, g)) <= \
                jump_process.remainder_second_order_scale(s, g, t)
