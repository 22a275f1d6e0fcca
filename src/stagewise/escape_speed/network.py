"""The network, its localized loss and the speed (Definition 2.1 of the escape-speed chapter).

Near the origin the loss of a depth-``L`` bias-free MLP is, to first order, the
*localized loss* ``L0(theta) = Tr[G^T f_theta(X)]`` (paper Eq. 1) with ``G`` the
gradient of the cost at zero output. ``L0`` is positively ``L``-homogeneous. An escape
direction (Definition 2.1) is a point ``rho`` with ``|rho|^2 = L`` and
``grad L0(rho) = -s rho``; its speed is ``s = -L0(rho)``. The optimal speed is
``s*(L) = max_{|theta|^2 = L} -L0(theta) = max_{|W_l|_F = 1} -L0(theta)`` (AM-GM).

Conventions: ``X`` is ``(d_in, N)``, ``G`` is ``(d_out, N)``; a batch of ``R`` networks
is a list ``Ws`` of tensors ``(R, n_l, n_{l-1})``. Everything is float64 and runs on
the device of its inputs; random numbers are drawn on CPU with a seeded generator.
"""
from __future__ import annotations

import torch

from stagewise.core.run.parameters import ParameterError
from stagewise.numerics.roundoff import is_zero

Weights = list[torch.Tensor]


class NoEscapeError(ValueError):
    """The localized loss is identically zero (G = 0): no escape direction exists (Definition 2.1 needs ``s > 0``)."""


def check_problem(X: torch.Tensor, G: torch.Tensor, widths: list[int], scale: float = 1.0) -> None:
    """Reject degenerate problems of Definition 2.1: depth < 2, widths < 1, mismatched shapes, G = 0.

    ``widths`` are the hidden widths (``L - 1`` of them). A zero ``G`` makes ``L0``
    vanish identically, so no escape direction (``s > 0``) exists: we say so. "Zero" is rounding level
    relative to ``scale``, the size of the cost's gradient for this problem (the chapter's problems are
    normalized, ``|G|_F`` of order 1; for ``G = -Y`` pass ``|Y|`` of the unnormalized targets): a ``G``
    computed as zero on one machine and ``1e-17`` on another gets the same answer.
    """
    if len(widths) < 1:
        raise ParameterError(f"depth {len(widths) + 1}: escape directions need depth >= 2 (one hidden layer)")
    if any(int(w) < 1 for w in widths):
        raise ParameterError(f"hidden widths {list(widths)}: every width must be >= 1")
    if X.ndim != 2 or G.ndim != 2 or X.shape[1] != G.shape[1]:
        raise ParameterError(f"shapes X {tuple(X.shape)}, G {tuple(G.shape)}: need (d_in, N) and (d_out, N)")
    if is_zero(float(G.abs().max()), scale, G.shape[1]):
        raise NoEscapeError("G = 0: the localized loss vanishes identically, so no escape direction exists")


def forward(Ws: Weights, X: torch.Tensor, relu: bool = True) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Pre-activations ``Z_l = W_l Z^sigma_{l-1}`` and post-activations ``Z^sigma_l`` (paper Sec. 1; the chapter's ``f_theta``).

    Returns ``(Z, Zs)`` with ``Z[l-1] = Z_l`` (l = 1..L, batched ``(R, n_l, N)``) and
    ``Zs[l] = Z^sigma_l`` for l = 0..L-1 (``Zs[0] = X``). No ReLU on the output layer.
    """
    R = Ws[0].shape[0]
    h = X.unsqueeze(0).expand(R, *X.shape)
    Z, Zs = [], [h]
    for i, W in enumerate(Ws):
        z = torch.bmm(W, h)
        Z.append(z)
        if i < len(Ws) - 1:
            h = torch.relu(z) if relu else z
            Zs.append(h)
    return Z, Zs


def localized_loss(Ws: Weights, X: torch.Tensor, G: torch.Tensor, relu: bool = True) -> torch.Tensor:
    """``L0(theta) = Tr[G^T f_theta(X)]`` for each network of the batch (Definition "Localized loss", paper Eq. 1)."""
    return (forward(Ws, X, relu)[0][-1] * G).sum(dim=(1, 2))


def speed(Ws: Weights, X: torch.Tensor, G: torch.Tensor, relu: bool = True) -> torch.Tensor:
    """Speed ``-L0(theta)`` of each network (Definition 2.1, ``s = -L0(rho)``, when ``|W_l|_F = 1``)."""
    return -localized_loss(Ws, X, G, relu)


def speed_and_grad(Ws: Weights, X: torch.Tensor, G: torch.Tensor, relu: bool = True) -> tuple[torch.Tensor, Weights]:
    """Speed ``-L0`` and its gradient ``grad(-L0)`` for every network, one batched forward/backward.

    Used for Lemma "Homogeneity" (Euler's identity ``theta . grad(-L0) = L s``) and by the solver.
    """
    leaves = [W.detach().requires_grad_(True) for W in Ws]
    with torch.enable_grad():
        s = speed(leaves, X, G, relu)
        grads = torch.autograd.grad(s.sum(), leaves)
    return s.detach(), [g.detach() for g in grads]


def sq_norm(Ws: Weights) -> torch.Tensor:
    """``|theta|^2 = sum_l |W_l|_F^2`` per network (the constraint ``|rho|^2 = L`` of Definition 2.1)."""
    return sum((W ** 2).sum(dim=(1, 2)) for W in Ws)


def normalize_layers(Ws: Weights) -> Weights:
    """Project onto the product of unit spheres ``|W_l|_F = 1`` (a dead layer stays 0).

    By AM-GM this set carries the maximum of Definition 2.1's ``s*(L)``.
    """
    out = []
    for W in Ws:
        n = W.flatten(1).norm(dim=1).clamp_min(1e-300)
        out.append(W / n[:, None, None])
    return out


def init_sphere(d_in: int, widths: list[int], d_out: int, restarts: int, generator: torch.Generator,
                device: torch.device | str = "cpu", scale: float = 1.0) -> Weights:
    """Gaussian weights for ``restarts`` networks, each layer rescaled to ``|W_l|_F = scale``.

    ``scale = 1``: a random start of the solver on the product of unit spheres (Definition 2.1).
    ``scale = alpha`` small: the balanced small initialization (gradient flow keeps the layers
    balanced) whose escape Proposition 2.2 and the escape-time law describe. Drawn on the CPU.
    """
    dims = [d_in, *widths, d_out]
    Ws = [torch.randn(restarts, dims[i + 1], dims[i], generator=generator, dtype=torch.float64)
          for i in range(len(dims) - 1)]
    return [scale * W for W in normalize_layers([W.to(device) for W in Ws])]


def direction(Ws: Weights) -> Weights:
    """``rho = sqrt(L) theta / |theta|`` per network: the point of the sphere ``|rho|^2 = L`` of Definition 2.1."""
    L = len(Ws)
    scale = torch.sqrt(L / sq_norm(Ws))
    return [W * scale[:, None, None] for W in Ws]


def pad_hidden(Ws: Weights, width: int) -> Weights:
    """Embed networks in a wider one by adding zero neurons to every hidden layer.

    Zero neurons have zero gradient (no input weights, no output weights) and stay zero under
    :func:`stagewise.escape_speed.ascent.projected_ascent` and under gradient descent, so networks of different widths can share one batch.
    """
    out = []
    for l, W in enumerate(Ws):
        R, n, m = W.shape
        rows = width if l < len(Ws) - 1 else n
        cols = width if l > 0 else m
        P = torch.zeros(R, rows, cols, dtype=W.dtype, device=W.device)
        P[:, :n, :m] = W
        out.append(P)
    return out


def mse_loss(Ws: Weights, X: torch.Tensor, Y: torch.Tensor) -> torch.Tensor:
    """``C(f) = |f(X) - Y|_F^2 / 2`` per network; its gradient at ``f = 0`` is ``G = -Y`` (Definition "Localized loss")."""
    return 0.5 * ((forward(Ws, X)[0][-1] - Y) ** 2).sum(dim=(1, 2))


def homogeneity_error(X: torch.Tensor, G: torch.Tensor, depths: tuple[int, ...], width: int, nets: int,
                      factor: float, generator: torch.Generator) -> float:
    """Lemma "Homogeneity": the largest relative error of ``L0(c theta) = c^L L0(theta)`` (``c = factor``) and of
    Euler's identity ``theta . grad L0 = L L0``, over ``nets`` random networks of each depth (hidden ``width``)."""
    err = 0.0
    for L in depths:
        W = init_sphere(X.shape[0], [width] * (L - 1), G.shape[0], nets, generator, X.device)
        l0 = localized_loss(W, X, G)
        scaled = localized_loss([factor * w for w in W], X, G)
        _, g = speed_and_grad(W, X, G)
        euler = -sum((w * gi).sum(dim=(1, 2)) for w, gi in zip(W, g))       # theta . grad L0
        err = max(err, float(((scaled - factor ** L * l0).abs() / l0.abs().clamp_min(1e-300) / factor ** L).max()),
                  float(((euler - L * l0).abs() / l0.abs()).max()))
    return err
