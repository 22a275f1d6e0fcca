"""Deliberately broken functions for tests/diagonal_incremental/test_diagonal_mutation.py."""


def halved_time_until_active(gamma, b, support, g_tol, b_hi=None, *, original):
    """Eq. (10) with a wrong constant: Delta(i) = (b_i - 1 + sgn g_i) / (2 g_i) (stage times halved)."""
    return 0.5 * original(gamma, b, support, g_tol, b_hi)
