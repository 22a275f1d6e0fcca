"""Properties of the deep ReLU network and its localized loss (Hypothesis, random small networks, float64).

Positive homogeneity layer by layer (scaling layer l by c_l > 0 scales f and L0 by prod c_l; the speed is a function
of the direction only), invariance under permutations of hidden neurons and under padding with zero neurons (what
lets networks of several widths share a batch), and the localized loss as the first-order term of the square loss
near 0 (C(f) = |Y|^2/2 + L0 + O(|f|^2) with G = -Y, Definition "Localized loss"). Controls: a negative factor
breaks the ReLU network's homogeneity (not the linear one's), and a random permutation of a layer's rows alone
changes the network.
"""
import torch
from hypothesis import given
from hypothesis import strategies as st

from properties import SCIENCE
from stagewise.escape_speed import network

NETWORKS = st.tuples(st.integers(2, 5), st.lists(st.integers(1, 5), min_size=1, max_size=4), st.integers(1, 3),
                     st.integers(0, 2**31 - 1))          # inputs, hidden widths, outputs, seed


def _draw(shape):
    d_in, widths, d_out, seed = shape
    gen = torch.Generator().manual_seed(seed)
    Ws = network.init_sphere(d_in, widths, d_out, 2, gen)
    X = torch.randn(d_in, 7, generator=gen, dtype=torch.float64)
    G = torch.randn(d_out, 7, generator=gen, dtype=torch.float64)
    return Ws, X, G, gen


@SCIENCE
@given(shape=NETWORKS, data=st.data())
def test_scaling_each_layer_scales_the_localized_loss_by_the_product(shape, data):
    Ws, X, G, _ = _draw(shape)
    factors = data.draw(st.lists(st.floats(0.2, 5.0), min_size=len(Ws), max_size=len(Ws)))
    scaled = network.localized_loss([c * W for c, W in zip(factors, Ws)], X, G)
    expected = torch.tensor(factors, dtype=torch.float64).prod() * network.localized_loss(Ws, X, G)
    torch.testing.assert_close(scaled, expected, rtol=1e-10, atol=1e-12)


def test_control_a_negative_factor_breaks_relu_homogeneity_only():
    Ws, X, G, _ = _draw((4, [5, 5], 2, 3))
    flipped = [Ws[0], -Ws[1], Ws[2]]
    for relu, changes in ((True, True), (False, False)):
        before, after = network.localized_loss(Ws, X, G, relu), -network.localized_loss(flipped, X, G, relu)
        assert (not torch.allclose(after, before)) is changes, relu


def _permute_hidden(Ws, layer: int, perm: torch.Tensor, rows_only: bool = False):
    out = [W.clone() for W in Ws]
    out[layer] = out[layer][:, perm, :]
    if not rows_only:
        out[layer + 1] = out[layer + 1][:, :, perm]
    return out


@SCIENCE
@given(shape=NETWORKS, data=st.data())
def test_permuting_hidden_neurons_leaves_the_network_unchanged(shape, data):
    Ws, X, G, gen = _draw(shape)
    layer = data.draw(st.integers(0, len(Ws) - 2))
    perm = torch.randperm(Ws[layer].shape[1], generator=gen)
    torch.testing.assert_close(network.speed(_permute_hidden(Ws, layer, perm), X, G), network.speed(Ws, X, G),
                               rtol=1e-12, atol=1e-12)


def test_control_permuting_one_side_only_changes_the_network():
    Ws, X, G, _ = _draw((4, [5, 5], 2, 5))
    perm = torch.tensor([1, 0, 2, 3, 4])
    assert not torch.allclose(network.speed(_permute_hidden(Ws, 0, perm, rows_only=True), X, G),
                              network.speed(Ws, X, G))


@SCIENCE
@given(shape=NETWORKS, extra=st.integers(0, 4))
def test_padding_with_zero_neurons_changes_nothing(shape, extra):
    Ws, X, G, _ = _draw(shape)
    wide = network.pad_hidden(Ws, max(W.shape[1] for W in Ws[:-1]) + extra)
    torch.testing.assert_close(network.speed(wide, X, G), network.speed(Ws, X, G), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(network.sq_norm(wide), network.sq_norm(Ws), rtol=1e-14, atol=0)


@SCIENCE
@given(shape=NETWORKS)
def test_the_localized_loss_is_the_first_order_term_of_the_square_loss(shape):
    """With G = -Y, C(f) = |Y|^2/2 + L0 + |f|^2/2 exactly, and the remainder |f|^2/2 shrinks as alpha^L relative to
    L0 when theta -> alpha theta (L the depth)."""
    Ws, X, G, _ = _draw(shape)
    Y, L = -G, len(Ws)
    ratios = []
    for alpha in (1.0, 0.5):
        small = [alpha * W for W in Ws]
        f = network.forward(small, X)[0][-1]
        l0 = network.localized_loss(small, X, G)
        rest = network.mse_loss(small, X, Y) - 0.5 * (Y ** 2).sum() - l0
        torch.testing.assert_close(rest, 0.5 * (f ** 2).sum(dim=(1, 2)), rtol=0, atol=1e-12 * float((Y ** 2).sum()))
        ratios.append(0.5 * (f ** 2).sum(dim=(1, 2)) / l0.abs().clamp_min(1e-300))
    torch.testing.assert_close(ratios[1], ratios[0] * 0.5 ** L, rtol=1e-9, atol=0)
