"""Algorithm 1 in closed form (the cases the unit tests use) and, for ``Sigma = I``, the
finite-alpha transition times."""
from __future__ import annotations

import numpy as np

from stagewise.diagonal_incremental.flow import normalize_init
from stagewise.numerics.roundoff import is_positive


def closed_form_orthogonal(beta_star: np.ndarray):
    """Algorithm 1 in closed form for ``Sigma = I`` (note Sec. 2.8): ``T_k = 1/|beta*|_(k)``, losses
    ``1/2 sum_{j>k} |beta*|_(j)^2``; returns ``(T, order, losses)`` over the nonzero entries."""
    mags = np.abs(beta_star)
    order = [int(i) for i in np.argsort(-mags) if is_positive(mags[i], mags.max(), mags.size)]
    T = [1.0 / mags[i] for i in order]
    sq = np.sort(mags)[::-1] ** 2
    losses = [0.5 * float(sq[k:].sum()) for k in range(len(order) + 1)]
    return T, order, losses


def orthogonal_transition_times(beta_star: np.ndarray, u0: np.ndarray, v0: np.ndarray, alpha: float):
    """Finite-alpha transition times for ``Sigma = I`` (derived in this book), up to terms of order
    ``alpha^2``: each coordinate is a logistic curve, and the loss crosses the midpoint between two plateaus
    when ``|beta_k - beta*_k| = |beta*_k| / sqrt 2``, which gives

    ``tau_k = 1/|beta*_k| + x [log(4 |beta*_k| (sqrt2 - 1)) - 2 log(u_k + s_k v_k)] / (2 |beta*_k|)``

    with ``x = 1/log(1/alpha)``, ``s_k = sgn beta*_k`` and ``(u, v)`` normalised so that ``u > |v|``.
    Returns ``(tau, init_term, detector_term)`` in Algorithm 1's stage order; ``init_term`` is the part that
    the finite-alpha correction of :mod:`.finite_alpha` predicts, ``detector_term`` the part it does not."""
    un, vn = normalize_init(u0, v0)
    _, order, _ = closed_form_orthogonal(beta_star)
    mags, s = np.abs(beta_star[order]), np.sign(beta_star[order])
    x = 1.0 / np.log(1.0 / alpha)
    init_term = -x * np.log(un[order] + s * vn[order]) / mags
    detector_term = x * np.log(4 * mags * (np.sqrt(2) - 1)) / (2 * mags)
    return 1.0 / mags + init_term + detector_term, init_term, detector_term
