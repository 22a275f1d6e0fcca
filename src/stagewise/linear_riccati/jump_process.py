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

