"""Properties of gradient descent and Algorithm 1 on orthonormal data (Hypothesis, random small instances).

The compiled batched loop against the plain reference on random instances, scales and step sizes; the symmetries of
the problem (X = I: permuting the data points together with the coordinates of every neuron, or permuting the
neurons, permutes what the run records and leaves its loss unchanged), and the same equivariance of Algorithm 1's
limit process (jump times and plateau losses unchanged, jumping neurons relabelled). Control: permuting the labels
alone, without the neurons' coordinates, changes the loss curve.
"""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from properties import SCIENCE
from stagewise.relu_orthogonal import algorithm, data, reference, training

INSTANCES = st.tuples(st.integers(0, 2**31 - 1), st.integers(3, 8), st.integers(1, 5), st.floats(-6.0, -1.0),
                      st.floats(0.05, 0.5))                     # seed, points n, neurons m, log lambda, step size


def _run(y, U, s, log_lam, eta, steps=600):
    Ub, bb, lb = training.balanced_state(U, s, log_lam)
    return training.gd_numba(y[None], Ub[None], bb[None], lb[None], np.array([eta]), 1.0, np.array([steps]),
                             rec_every=50)


@SCIENCE
@given(instance=INSTANCES)
def test_the_compiled_loop_equals_the_plain_reference(instance):
    seed, n, m, log_lam, eta = instance
    y, U, s, _ = data.draw_instance(seed, n, m, "gaussian", "random")
    res = _run(y, U, s, log_lam, eta)
    Ub, bb, lb = training.balanced_state(U, s, log_lam)
    Un, bn, ln, losses = reference.gd_reference(y, Ub, bb, lb, eta, 1.0, 600, rec_every=50)
    W, a = res.weights()
    np.testing.assert_allclose(W[0], np.exp(ln)[:, None] * Un, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(a[0], np.exp(ln) * bn, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(res.loss[0, :len(losses)], losses, rtol=1e-9)


def _permuted_instance(instance, data_):
    """A random instance (labels, directions, signs, mask) and a permutation of its points and of its neurons."""
    seed, n, m = instance[:3]
    y, U, s, M = data.draw_instance(seed, n, m, "gaussian", "random")
    return y, U, s, M, np.array(data_.draw(st.permutations(range(n)))), np.array(data_.draw(st.permutations(range(m))))


@SCIENCE
@given(instance=INSTANCES, data_=st.data())
def test_gradient_descent_is_equivariant_under_permutations_of_points_and_neurons(instance, data_):
    log_lam, eta = instance[3:]
    y, U, s, _, points, neurons = _permuted_instance(instance, data_)
    base = _run(y, U, s, log_lam, eta)
    moved = _run(y[points], U[neurons][:, points], s[neurons], log_lam, eta)
    np.testing.assert_allclose(moved.loss, base.loss, rtol=1e-9, atol=1e-12 * base.loss[0, 0])   # summation order
    np.testing.assert_array_equal(moved.point_fit[0], base.point_fit[0][points])
    np.testing.assert_array_equal(moved.neuron_jump[0], base.neuron_jump[0][neurons])


def test_control_permuting_the_labels_alone_changes_the_run():
    y, U, s, _ = data.draw_instance(3, 6, 3, "gaussian", "random")
    base, moved = _run(y, U, s, -4.0, 0.3), _run(np.roll(y, 1), U, s, -4.0, 0.3)
    assert not np.allclose(moved.loss, base.loss)


@SCIENCE
@given(instance=INSTANCES, data_=st.data())
def test_algorithm1_is_equivariant_under_permutations_of_points_and_neurons(instance, data_):
    m = instance[2]
    y, U, s, M, points, neurons = _permuted_instance(instance, data_)
    base = algorithm.algorithm1(y, M, s)
    moved = algorithm.algorithm1(y[points], M[points][:, neurons], s[neurons])
    assert (base.tie is None) == (moved.tie is None)
    np.testing.assert_allclose(moved.times, base.times, rtol=1e-12)
    np.testing.assert_allclose(moved.plateau_losses, base.plateau_losses, rtol=1e-12, atol=1e-15)
    if base.tie is None:                                       # a tie's choice is reported, not made
        groups = lambda lp, relabel: [sorted(relabel[np.atleast_1d(g)]) for g in (lp.members or  # noqa: E731
                                                                                  [[j] for j in lp.neurons])]
        assert groups(moved, neurons) == groups(base, np.arange(m))   # neurons with equal masks jump as one group
        for fitted, fitted_base in zip(moved.fitted_sets, base.fitted_sets):
            np.testing.assert_array_equal(np.sort(points[fitted]), np.sort(fitted_base))
