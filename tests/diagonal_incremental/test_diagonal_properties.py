"""Properties of Algorithm 1 and the diagonal attention head (Hypothesis, random small instances, float64).

Algorithm 1 against the plain closed form for Sigma = I (T_k = 1/|beta*|_(k), the losses of the remaining
entries), its equivariance under a permutation of the coordinates and its scaling law (beta* -> c beta* divides
every T_k by c and multiplies the losses by c^2); the head's compiled gradient against autograd and against the
batched torch expression; and the head's symmetries: permuting the tokens of a sample permutes its output rows
(no positional encoding), permuting the features together with beta's two halves leaves the loss unchanged.
Control: a permutation of the key-query half of beta alone changes the loss.
"""
import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from properties import SCIENCE
from stagewise.diagonal_incremental.algorithm import algorithm1
from stagewise.diagonal_incremental.attention import attention_output, make_teacher_problem
from stagewise.diagonal_incremental.closed_forms import closed_form_orthogonal
from stagewise.diagonal_incremental.networks import LinearDiagonal


@st.composite
def teachers(draw):
    """A sparse beta* with well separated magnitudes (Assumption 4.3 excludes ties) and random signs."""
    p = draw(st.integers(2, 6))
    count = draw(st.integers(1, p))
    mags = np.array(draw(st.lists(st.floats(0.3, 3.0), min_size=count, max_size=count)))
    mags = np.sort(mags) * (1.0 + 0.2 * np.arange(count))                 # distinct by at least 20 %
    signs = np.array(draw(st.lists(st.sampled_from([-1.0, 1.0]), min_size=count, max_size=count)))
    places = np.array(draw(st.permutations(range(p))))[:count]
    beta = np.zeros(p)
    beta[places] = mags * signs
    return beta


def _algorithm1(beta_star: np.ndarray):
    model = LinearDiagonal(torch.eye(beta_star.size, dtype=torch.float64), torch.from_numpy(beta_star))
    stages = algorithm1(model)
    assert stages.breakdown is None
    return [s.T for s in stages[1:]], [s.coordinate for s in stages[1:]], [s.loss for s in stages]


@SCIENCE
@given(beta_star=teachers())
def test_algorithm1_equals_the_closed_form_for_an_identity_covariance(beta_star):
    T, order, losses = _algorithm1(beta_star)
    T_ref, order_ref, losses_ref = closed_form_orthogonal(beta_star)
    assert order == order_ref
    np.testing.assert_allclose(T, T_ref, rtol=1e-6)
    np.testing.assert_allclose(losses, losses_ref, rtol=1e-6, atol=1e-9)


@SCIENCE
@given(beta_star=teachers(), data=st.data())
def test_algorithm1_is_equivariant_under_permutations_and_obeys_its_scaling_law(beta_star, data):
    perm = np.array(data.draw(st.permutations(range(beta_star.size))))
    c = data.draw(st.floats(0.25, 4.0))
    T, order, losses = _algorithm1(beta_star)
    T_p, order_p, losses_p = _algorithm1(c * beta_star[perm])
    inverse = np.argsort(perm)
    assert [int(inverse[i]) for i in order] == order_p
    np.testing.assert_allclose(np.array(T_p) * c, T, rtol=1e-6)
    np.testing.assert_allclose(np.array(losses_p) / c ** 2, losses, rtol=1e-6, atol=1e-9)


HEADS = st.tuples(st.integers(1, 4), st.integers(2, 5), st.integers(2, 4), st.integers(0, 2**31 - 1))


def _head(shape):
    n_samples, n_tokens, d, seed = shape
    model, beta_star = make_teacher_problem(n_samples, n_tokens, d, 1, 1, seed)
    beta = torch.randn(3, 2 * d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 0.7
    return model, beta


@SCIENCE
@given(shape=HEADS)
def test_the_heads_gradient_is_minus_the_autograd_gradient_on_cpu_and_as_torch(shape):
    model, beta = _head(shape)
    reference = super(type(model), model).g(beta)                          # -grad Ltilde by autograd
    torch.testing.assert_close(model.g(beta), reference, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(model.g_torch(beta), reference, rtol=1e-10, atol=1e-12)


@SCIENCE
@given(shape=HEADS, data=st.data())
def test_the_head_is_equivariant_under_token_and_feature_permutations(shape, data):
    model, beta = _head(shape)
    n_tokens, d = model.X.shape[1], model.X.shape[2]
    tokens = torch.tensor(data.draw(st.permutations(range(n_tokens))))
    torch.testing.assert_close(attention_output(model.X[:, tokens], beta), attention_output(model.X, beta)[:, :, tokens])
    features = torch.tensor(data.draw(st.permutations(range(d))))
    moved = type(model)(model.X[..., features], model.Y[..., features])
    both = torch.cat([features, features + d])
    torch.testing.assert_close(moved.loss(beta[:, both]), model.loss(beta), rtol=1e-12, atol=1e-14)


def test_control_permuting_half_of_beta_changes_the_loss():
    model, beta = _head((3, 4, 3, 5))
    features = torch.tensor([1, 2, 0])
    moved = type(model)(model.X[..., features], model.Y[..., features])
    half = torch.cat([features, torch.arange(3, 6)])                     # key-query entries moved, value-output not
    assert not torch.allclose(moved.loss(beta[:, half]), model.loss(beta))
