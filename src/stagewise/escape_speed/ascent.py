"""The solver: batched normalized projected ascent on the product of unit spheres.

It computes lower bounds on the optimal escape speed ``s*(L)`` of Definition 2.1
(``max`` of ``-L0`` over ``|W_l|_F = 1``), plus the two certificates of a computed optimum
(KKT residual, perturbation gain) and the naive fixed point that fails on ReLU networks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from stagewise.escape_speed.network import Weights, direction, normalize_layers, speed, speed_and_grad
from stagewise.numerics.flows import assert_finite


@dataclass
class AscentResult:
    """Best point per restart (``Ws``, on the product of unit spheres), its speed ``-L0`` (Definition 2.1), and the trace."""
    Ws: Weights
    speeds: torch.Tensor
    trace: torch.Tensor = field(repr=False)  # (steps + 1, R) speed along the run

    def best(self) -> tuple[Weights, float]:
        """The best network over restarts (batch of one) and its speed."""
        i = int(torch.argmax(self.speeds))
        return [W[i:i + 1] for W in self.Ws], float(self.speeds[i])


def projected_ascent(Ws: Weights, X: torch.Tensor, G: torch.Tensor, steps: int, eta: float | torch.Tensor,
                     eta_final: float, relu: bool = True, normalized: bool = True, progress=None) -> AscentResult:
    """Maximize the speed ``-L0`` on ``|W_l|_F = 1`` for all restarts at once: lower bounds on ``s*(L)`` (Definition 2.1).

    The chapter's "How we compute s*" paragraph describes this solver.

    Each step moves by ``eta_t * grad / |grad|`` (all layers together, per restart) and
    re-normalizes every layer; ``eta_t`` decays geometrically from ``eta`` to
    ``eta_final`` so that iterates settle on the cusps (ReLU hinges) where optima sit.
    ``normalized=False`` uses the raw gradient (the variant that stalls at depth).
    The best iterate of each restart is kept, so the result never decreases. ``eta`` may be a
    tensor ``(R,)`` (one schedule per restart, e.g. small steps for warm starts). NaN or overflow
    raises the shared :class:`~stagewise.numerics.flows.DivergenceError` naming ``pga_eta``. ``progress`` (optional,
    e.g. ``run.progress``) wraps the loop over steps.
    """
    eta0 = torch.as_tensor(eta, dtype=Ws[0].dtype, device=Ws[0].device).expand(Ws[0].shape[0])
    Ws = normalize_layers([W.detach().clone() for W in Ws])
    best_W = [W.clone() for W in Ws]
    best_s = speed(Ws, X, G, relu)
    trace = [best_s.clone()]
    for t in (range(steps) if progress is None else progress(range(steps), desc="projected ascent")):
        eta_t = (eta0 * (eta_final / eta0) ** (t / max(steps - 1, 1)))[:, None, None]
        s, g = speed_and_grad(Ws, X, G, relu)
        if normalized:
            gn = torch.sqrt(sum((gi ** 2).sum(dim=(1, 2)) for gi in g)).clamp_min(1e-300)
            Ws = normalize_layers([W + eta_t * gi / gn[:, None, None] for W, gi in zip(Ws, g)])
        else:
            Ws = normalize_layers([W + eta_t * gi for W, gi in zip(Ws, g)])
        s = speed(Ws, X, G, relu)
        assert_finite("pga_eta", float(eta0.max()), t, s)
        better = s > best_s
        best_s = torch.where(better, s, best_s)
        best_W = [torch.where(better[:, None, None], W, B) for W, B in zip(Ws, best_W)]
        trace.append(s)
    return AscentResult(best_W, best_s, torch.stack(trace))


def power_iteration(Ws: Weights, X: torch.Tensor, G: torch.Tensor, steps: int) -> torch.Tensor:
    """The naive fixed point ``rho <- sqrt(L) grad(-L0)(rho) / |grad|`` of Definition 2.1 (the analogue of power iteration).

    Returns the speed trace ``(steps + 1, R)`` on the product of spheres. For ReLU nets it
    oscillates or collapses to a dead network; kept to show why damping is needed.
    """
    L = len(Ws)
    Ws = normalize_layers(Ws)
    trace = [speed(Ws, X, G)]
    for _ in range(steps):
        _, g = speed_and_grad(Ws, X, G)
        gn = torch.sqrt(sum((gi ** 2).sum(dim=(1, 2)) for gi in g)).clamp_min(1e-300)
        rho = [math.sqrt(L) * gi / gn[:, None, None] for gi in g]
        Ws = normalize_layers(rho)
        trace.append(speed(Ws, X, G))
    return torch.stack(trace)


def kkt_residual(Ws: Weights, X: torch.Tensor, G: torch.Tensor) -> torch.Tensor:
    """``|grad L0(rho) + s rho| / |grad L0(rho)|`` at ``rho`` scaled to ``|rho|^2 = L``, ``s = -L0(rho)``.

    Zero at a differentiable escape direction (the condition ``grad L0(rho) = -s rho`` of Definition 2.1). Optima on ReLU hinges (data on a kink)
    have a large residual with the autograd convention ``sigma'(0) = 0``; it is then
    not a valid certificate (see :func:`perturbation_gain`).
    """
    rho = direction(Ws)
    s, g = speed_and_grad(rho, X, G)  # g = grad(-L0)
    num = torch.sqrt(sum(((gi - s[:, None, None] * r) ** 2).sum(dim=(1, 2)) for gi, r in zip(g, rho)))
    den = torch.sqrt(sum((gi ** 2).sum(dim=(1, 2)) for gi in g)).clamp_min(1e-300)
    return num / den


def perturbation_gain(Ws: Weights, X: torch.Tensor, G: torch.Tensor, delta: float, n_dirs: int,
                      generator: torch.Generator) -> torch.Tensor:
    """Largest speed gain ``max_d s(retract(W + delta d)) - s(W)`` over random unit directions.

    A certificate of local optimality for ``s*(L)`` (Definition 2.1) that works on ReLU kinks: at a local maximum the
    gain is at most ``O(delta^2)``; a non-optimal point gains ``O(delta)``.
    """
    R = Ws[0].shape[0]
    base = speed(Ws, X, G)
    best = torch.full_like(base, -math.inf)
    for _ in range(n_dirs):
        d = [torch.randn(W.shape, generator=generator, dtype=W.dtype).to(W.device) for W in Ws]
        nd = torch.sqrt(sum((x ** 2).sum(dim=(1, 2)) for x in d))
        moved = normalize_layers([W + delta * x / nd[:, None, None] for W, x in zip(Ws, d)])
        best = torch.maximum(best, speed(moved, X, G) - base)
    return best[:R]
