"""The gamma -> 0 limit on whitened data: the jump process (``thm-linear-riccati-jump``)."""
from __future__ import annotations

import numpy as np


def jump_time(s):
    """gamma -> 0 limit of the rescaled learning time t / ln(1/gamma): 1/(2 sigma_*,i) (Theorem C.12,
    ``thm-linear-riccati-jump``)."""
    return 1.0 / (2 * np.asarray(s, float))


def rescaled_half_time_first_order(s, gamma):
    """Derived rate of ``thm-linear-riccati-jump``, first correction: t_1/2 / ln(1/gamma) ~ 1/(2s) + ln(2s) / (2 s
    ln(1/gamma)), so the rescaled time approaches the jump time only like 1/ln(1/gamma)."""
    s = np.asarray(s, float)
    return 1 / (2 * s) + np.log(2 * s) / (2 * s * np.log(1 / np.asarray(gamma, float)))


def jump_process(s, tau):
    """Jump process (``thm-linear-riccati-jump``): the gamma -> 0 limit of sigma_beta(ln(1/gamma) tau): s * 1(tau >
    1/(2 s)) (value s/(1+2s) at the jump)."""
    s, tau = np.asarray(s, float), np.asarray(tau, float)
    return np.where(tau > jump_time(s), s, np.where(tau == jump_time(s), s / (1 + 2 * s), 0.0))



def half_time_remainder(s, gamma, t_half):
    """Derived expansion of ``thm-linear-riccati-jump``: the remainder t_1/2 - ln(2 s/gamma)/(2 s) of the exact
    half-time ``t_half`` beyond the leading logarithm. It is -gamma/(2 s^2) + O(gamma^2 ln(1/gamma))."""
    s = np.asarray(s, float)
    return np.asarray(t_half, float) - np.log(2 * s / np.asarray(gamma, float)) / (2 * s)


def remainder_first_order(s, gamma):
    """The O(gamma) term of :func:`half_time_remainder`: -gamma / (2 s^2) (``thm-linear-riccati-jump``, derived)."""
    return -np.asarray(gamma, float) / (2 * np.asarray(s, float) ** 2)


def remainder_second_order_scale(s, gamma, t_half):
    """Scale of what is left after the O(gamma) term: the second-order term is gamma^2 (4.5 - ln(2 s/gamma)) /
    (4 s^3) (derived by expanding the exact half-time), so its size is at most gamma^2 (4.5 + |ln(2 s/gamma)|) /
    (4 s^3); plus 8 eps t_1/2 for the rounding of t_1/2 itself, which dominates once gamma^2 is below eps."""
    s, gamma = np.asarray(s, float), np.asarray(gamma, float)
    return (gamma ** 2 * (4.5 + np.abs(np.log(2 * s / gamma))) / (4 * s ** 3)
            + 8 * np.finfo(float).eps * np.abs(np.asarray(t_half, float)))
