"""Observables of the staircase of Theorem 4.1 (thm-diagonal-incremental-main)."""
import numpy as np

from stagewise.diagonal_incremental import plateaus


def test_count_plateaus_midpoints_and_supports():
    """Theorem 4.1's staircase: K drops give K + 1 plateaus; midpoints between the T_k; ranks of Example 3.2.
    The drop that counts is half the smallest relative drop of the theory's plateau losses: small drops count
    when the theory's drops are small."""
    tau = np.linspace(0, 4, 801)
    loss = np.where(tau < 1, 1.0, np.where(tau < 2.5, 0.4, 0.05))
    assert plateaus.drop_threshold([1.0, 0.4, 0.05]) == 0.3
    assert plateaus.count_plateaus(tau, loss, [1.0, 0.4, 0.05]) == 3
    small = np.where(tau < 1, 1.0, np.where(tau < 2.5, 0.85, 0.72))          # drops of 15% each
    assert plateaus.count_plateaus(tau, small, [1.0, 0.85, 0.72]) == 3
    assert plateaus.count_plateaus(tau, small, [1.0, 0.5, 0.2]) == 1         # half of 50%: the 15% drops miss
    np.testing.assert_allclose(plateaus.plateau_midpoints([1.0, 2.5], 4.0), [0.5, 1.75, 3.25])
    beta = np.array([[0.0, 0.5, 1e-4, -0.2], [0.0, 0.0, 0.0, 0.0]])
    np.testing.assert_array_equal(plateaus.support_counts(beta, 2), [[1, 1], [0, 0]])


def test_transition_times_with_and_without_refinement():
    """Transition times of Theorem 4.1: first crossings of the midpoint levels, bisection on a dense loss."""
    tau = np.linspace(0, 4, 41)

    def dense(t):
        return 1.0 if t < 1.234 else (0.4 if t < 2.5 else 0.05)
    loss = np.array([dense(t) for t in tau])
    levels = [1.0, 0.4, 0.05]
    coarse = plateaus.transition_times(tau, loss, levels)
    fine = plateaus.transition_times(tau, loss, levels, dense)
    assert abs(coarse[0] - 1.234) <= 0.1 and abs(fine[0] - 1.234) < 1e-9 and abs(fine[1] - 2.5) < 1e-9
    assert np.isnan(plateaus.transition_times(tau, loss, [1.0, 0.4, 0.05, 0.0])[-1])
