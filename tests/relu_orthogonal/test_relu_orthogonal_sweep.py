"""Tests of stagewise.relu_orthogonal.sweep: Theorem 2 as lambda -> 0 (thm-relu-orthogonal-jumps), small."""
import numpy as np
import pytest

from stagewise.core.run.parameters import ParameterError
from stagewise.relu_orthogonal import sweep


def test_sweep_converges_to_algorithm1():
    """Theorem 2: order and sets right, extrapolated jump times close to the step-size-corrected Algorithm 1,
    plateau errors shrinking as lambda -> 0."""
    draws = sweep.sweep_draws(4, 2, 40.0)
    sw = sweep.run_sweep(draws, [100.0, 25.0, 50.0], 0.2)
    assert sw.Ls.tolist() == [25.0, 50.0, 100.0] and sw.run_index(1, 2) == 5
    err = sweep.measure_sweep(sw)
    assert all(err.order_ok) and all(err.sets_ok)
    assert max(err.extra_err) < 2e-2 and max(err.raw_L) < 0.5 * np.log(32) + 1
    assert err.pl_by_L[-1] < err.pl_by_L[0]
    cols, rows = sweep.error_table(sw, err)
    assert len(rows) == 3 and len(cols) == 4


def test_too_small_t_max_names_the_parameter():
    """No draw finishes jumping before a tiny t_max: ParameterError naming sweep_t_max."""
    with pytest.raises(ParameterError, match="parameter sweep_t_max"):
        sweep.sweep_draws(0, 1, 0.01)


def test_runner_up_near_tie_is_ambiguous():
    """Theorem 2 resolves the jump order only when line 8's winner beats every competitor by more than their two
    O(1/log(1/lambda)) allowances: a neuron that loses its points to a near-simultaneous winner (a near-tie of
    Assumption 4(ii), never a jump of Algorithm 1) makes the order ambiguous at moderate lambda."""
    from stagewise.relu_orthogonal import algorithm
    M = np.array([[1, 1], [1, 1], [0, 1]], bool)
    tol = sweep.offset_tolerance(3)
    near = algorithm.algorithm1(np.array([1.0, 1.0, 1e-3]), M, np.ones(2))
    assert near.K == 1 and near.neurons.tolist() == [1]
    assert sweep.ambiguous_order(near, 100.0, tol) and sweep.ambiguous_order(near, 2000.0, tol)
    far = algorithm.algorithm1(np.array([1.0, 1.0, 1.0]), M, np.ones(2))
    assert not sweep.ambiguous_order(far, 100.0, tol) and sweep.ambiguous_order(far, 10.0, tol)
