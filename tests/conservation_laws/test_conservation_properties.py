"""Properties of the model families (Hypothesis, small random networks and data, float64).

The theorem's mechanism, tested as identities rather than along one trajectory: for a positively homogeneous
activation, rescaling a hidden neuron (incoming weights times c, outgoing divided by c) leaves the network's output
unchanged, and so every invariant's gradient is orthogonal to the gradient of any loss, which is why the invariant
is conserved under gradient flow (Theorem "Balancedness"). The tanh family is the control: it breaks both.
"""
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from properties import SCIENCE
from stagewise.conservation_laws.models import FAMILIES

HOMOGENEOUS = [name for name, family in FAMILIES.items() if family.homogeneous]
SIZES = st.tuples(st.integers(1, 2), st.integers(2, 5), st.integers(1, 4), st.integers(2, 5), st.integers(3, 4),
                  st.integers(0, 2**31 - 1))   # batch, inputs d, outputs k, width m, depth L, seed


def _network(name: str, sizes):
    batch, d, k, m, depth, seed = sizes
    gen = torch.Generator().manual_seed(seed)
    k = 1 if name in ("diagonal", "relu", "tanh") else k      # scalar-output families
    m = d if name == "diagonal" else m
    shapes = FAMILIES[name].shapes(d, k, m, depth)
    params = [torch.randn(batch, *s, generator=gen, dtype=torch.float64) for s in shapes]
    X = torch.randn(2 * d, d, generator=gen, dtype=torch.float64)
    Y = torch.randn(2 * d, k, generator=gen, dtype=torch.float64)
    return params, X, Y


def _flow_derivative(name: str, params, X, Y) -> torch.Tensor:
    """d/dt of every invariant entry along gradient flow on the square loss, -<grad I, grad L>, per entry."""
    family = FAMILIES[name]
    leaves = [p.clone().requires_grad_(True) for p in params]
    loss = 0.5 * ((family.forward(leaves, X) - Y) ** 2).sum()
    grads = torch.autograd.grad(loss, leaves)
    invariant = family.invariant(leaves)
    rows = []
    for entry in range(invariant.shape[1]):
        g_inv = torch.autograd.grad(invariant[:, entry].sum(), leaves, retain_graph=True)
        rows.append(-sum((a * b).flatten(1).sum(1) for a, b in zip(g_inv, grads)))
    scale = sum(float(g.abs().max()) for g in grads) * sum(float(p.abs().max()) for p in params) + 1.0
    return torch.stack(rows, dim=1) / scale


@SCIENCE
@given(name=st.sampled_from(HOMOGENEOUS), sizes=SIZES)
def test_every_invariant_is_flat_along_the_gradient_of_the_loss(name, sizes):
    params, X, Y = _network(name, sizes)
    assert float(_flow_derivative(name, params, X, Y).abs().max()) < 1e-12


@SCIENCE
@given(sizes=SIZES)
def test_control_tanh_invariant_moves_along_the_gradient(sizes):
    """The non-homogeneous family: the same derivative is far from zero (the identity above can fail)."""
    params, X, Y = _network("tanh", sizes)
    assert float(_flow_derivative("tanh", params, X, Y).abs().max()) > 1e-6


def _rescale_neuron(name: str, params, c: float):
    """Hidden neuron 0 (coordinate 0 for the diagonal network): incoming weights times c, outgoing divided by c."""
    p = [q.clone() for q in params]
    if name == "diagonal":
        p[0][:, 0] *= c
        p[1][:, 0] /= c
    elif name == "linear":
        p[0][:, :, 0] *= c
        p[1][:, 0, :] /= c
    elif name in ("relu", "tanh"):
        p[0][:, 0, :] *= c
        p[1][:, 0] /= c
    else:                                                      # deep ReLU, first hidden layer
        p[0][:, 0, :] *= c
        p[1][:, :, 0] /= c
    return p


@SCIENCE
@given(name=st.sampled_from(HOMOGENEOUS), sizes=SIZES, c=st.floats(0.2, 5.0))
def test_rescaling_a_hidden_neuron_leaves_the_network_unchanged(name, sizes, c):
    params, X, _ = _network(name, sizes)
    family = FAMILIES[name]
    before, after = family.forward(params, X), family.forward(_rescale_neuron(name, params, c), X)
    torch.testing.assert_close(after, before, rtol=1e-12, atol=1e-12)


def test_control_rescaling_changes_the_tanh_network():
    params, X, _ = _network("tanh", (1, 4, 1, 3, 3, 7))
    family = FAMILIES["tanh"]
    assert not torch.allclose(family.forward(_rescale_neuron("tanh", params, 3.0), X), family.forward(params, X))


@pytest.mark.parametrize("name", HOMOGENEOUS)
def test_the_rescaling_moves_the_invariant(name):
    """The symmetry is not the identity: it changes the neuron's balance (the invariant is not trivially fixed)."""
    params, _, _ = _network(name, (1, 4, 2, 3, 3, 11))
    family = FAMILIES[name]
    assert not torch.allclose(family.invariant(_rescale_neuron(name, params, 2.0)), family.invariant(params))
