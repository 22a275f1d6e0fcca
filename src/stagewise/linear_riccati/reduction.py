"""The reduction experiment: Lemma 3.1 for GD (full width = reduced) and Lemma 3.2 / C.10 along the flow.

Statements ``thm-linear-riccati-reduction`` and ``thm-linear-riccati-invariant``, on the Fig. 1a problem.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stagewise.linear_riccati.data import Problem
from stagewise.linear_riccati.gradient_descent import gd
from stagewise.linear_riccati.gradient_flow import psd_sqrt, z_flow
from stagewise.linear_riccati.initialization import orthogonal_init, reduced_init


#: Records per run of Fig. 1a (every 5 steps at the default eta and horizon: the figure's log time axis starts at
#: the first record, before the first stage).
RECORDS = 4000


@dataclass
class ReductionRun:
    """Full-width and reduced GD from the same I_gamma (records of :func:`gd`), the P that links them, the largest
    entry difference of (W1, W2) and the part of W1 outside the row space of P. Controls: the same difference with
    the reduced run lifted by P with its rows cycled (another basis of the same row space, ``wrong_lift``), and the
    relative invariant error ||Z1^T Z1 - Z2 Z2^T - 2 gamma I||_F / (2 gamma sqrt(d)) of the reduced GD run itself
    (GD at step eta instead of the flow, ``gd_invariant_rel``)."""
    full: dict
    reduced: dict
    P: torch.Tensor
    full_vs_reduced: float
    off_subspace: float
    wrong_lift: float = float("nan")
    gd_invariant_rel: float = float("nan")


def full_vs_reduced(problem: Problem, gammas, width: int, eta: float, steps: int,
                    generator: torch.Generator) -> ReductionRun:
    """Lemma 3.1 extended to GD (``thm-linear-riccati-reduction``): run GD at full width from I_gamma (random P from
    ``generator``) and in the reduced coordinates, and measure max |W - lift(Z)| and ||W1 (I - P^T P)||_F."""
    d, k = problem.XtY.shape
    device = problem.X.device
    record_every = max(1, steps // RECORDS)
    W1, W2, P = orthogonal_init(gammas, d, width, generator, k, device=device)
    full = gd(problem.XtX, problem.XtY, W1, W2, eta, steps, record_every=record_every)
    Z1, Z2 = reduced_init(gammas, d, k, device=device)
    red = gd(problem.XtX, problem.XtY, Z1, Z2, eta, steps, record_every=record_every)
    out = ReductionRun(full, red, P, 0.0, off_subspace(full["W1"], P))
    out.full_vs_reduced = lift_error(out)
    out.wrong_lift = lift_error(out, shift=1)
    out.gd_invariant_rel = invariant_rel(red, gammas)
    return out


def lift_error(run: ReductionRun, shift: int = 0) -> float:
    """Largest entry of |W - lift(Z)| between the full-width and the reduced GD run, (W1, W2) against (Z1 P, P^T Z2);
    ``shift`` cycles the rows of P first (another basis of the same row space: the control, a wrong lift)."""
    P = torch.roll(run.P, shift, dims=0) if shift else run.P
    return float(max((run.full["W1"] - run.reduced["W1"] @ P).abs().max(),
                     (run.full["W2"] - P.T @ run.reduced["W2"]).abs().max()))


def invariant_rel(records: dict, gammas) -> float:
    """Largest relative invariant error ||Z1^T Z1 - Z2 Z2^T - 2 gamma I||_F / (2 gamma sqrt(d)) at the end of a GD run
    (``records`` of :func:`gd`, one batch element per gamma): the discrete steps break the flow's invariant."""
    inv = records["inv"]
    d = inv.shape[-1]
    g = torch.as_tensor(np.asarray(gammas, float), dtype=torch.float64, device=inv.device)[:, None, None]
    err = torch.linalg.norm(inv - 2 * g * torch.eye(d, dtype=torch.float64, device=inv.device), dim=(-2, -1))
    return float((err / (2 * g[:, 0, 0] * np.sqrt(d))).max())


def off_subspace_with_w2(problem: Problem, gamma: float, P: torch.Tensor, eta: float, steps: int,
                         generator: torch.Generator, w2_std: float) -> float:
    """Control of Lemma 3.1's subspace claim: full-width GD from W1(0) = sqrt(2 gamma) P (in the row space of P at
    t = 0) but with a Gaussian W2(0) of standard deviation ``w2_std`` instead of 0 (the Fig. 4 setting); the update
    E W2^T then leaves the row space, and :func:`off_subspace` measures how far W1 went after ``steps`` steps."""
    d, k = problem.XtY.shape
    W1 = (np.sqrt(2 * gamma) * P)[None].to(problem.X.device)
    W2 = (w2_std * torch.randn(1, P.shape[1], k, generator=generator, dtype=torch.float64)).to(problem.X.device)
    res = gd(problem.XtX, problem.XtY, W1, W2, eta, steps, record_every=max(1, steps))
    return off_subspace(res["W1"], P)


def off_subspace(W1: torch.Tensor, P: torch.Tensor) -> float:
    """||W1 (I - P^T P)||_F, largest over the batch: the part of W1 outside the row space of P (Lemma 3.1,
    ``thm-linear-riccati-reduction``)."""
    eye = torch.eye(P.shape[1], dtype=P.dtype, device=P.device)
    return float(torch.linalg.norm(W1 @ (eye - P.T @ P), dim=(-2, -1)).max())


@dataclass
class FlowInvariant:
    """Largest relative error of Z1^T Z1 - Z2 Z2^T = 2 gamma I, and largest error of Lemma C.10, along the flow;
    control: the error of C.10 without its gamma I term, W1 W1^T = (gamma^2 I + beta beta^T)^{1/2} (``c10_control``)."""
    invariant_rel: float
    c10: float
    c10_control: float = float("nan")
    Z1: torch.Tensor = None
    Z2: torch.Tensor = None
    gamma: float = float("nan")


def invariant_along_flow(problem: Problem, gamma: float, times: np.ndarray) -> FlowInvariant:
    """Lemma 3.2 (``thm-linear-riccati-invariant``) and its consequence Lemma C.10 along the numerical reduced flow
    (3.4): ||Z1^T Z1 - Z2 Z2^T - 2 gamma I||_F / (2 gamma sqrt(d)) and
    ||Z1 Z1^T - gamma I - (gamma^2 I + beta beta^T)^{1/2}||_F, maximized over ``times``."""
    d = problem.XtY.shape[0]
    Z1, Z2 = z_flow(problem.XtX, problem.XtY, gamma, times)
    eye_d = torch.eye(d, dtype=torch.float64, device=problem.X.device)
    inv = torch.linalg.norm(Z1.transpose(-2, -1) @ Z1 - Z2 @ Z2.transpose(-2, -1) - 2 * gamma * eye_d,
                            dim=(-2, -1)) / (2 * gamma * np.sqrt(d))
    out = FlowInvariant(float(inv.max()), 0.0, float("nan"), Z1, Z2, gamma)
    out.c10 = c10_error(out)
    out.c10_control = c10_error(out, gamma_term=False)
    return out


def c10_error(flow: FlowInvariant, gamma_term: bool = True) -> float:
    """Largest ||Z1 Z1^T - gamma I - (gamma^2 I + beta beta^T)^{1/2}||_F along the flow (Lemma C.10);
    ``gamma_term`` False drops the gamma I term of the formula (the control)."""
    Z1, Z2, gamma = flow.Z1, flow.Z2, flow.gamma
    eye_d = torch.eye(Z1.shape[-1], dtype=torch.float64, device=Z1.device)
    beta = Z1 @ Z2
    root = psd_sqrt(gamma ** 2 * eye_d + beta @ beta.transpose(-2, -1))
    shift = gamma * eye_d if gamma_term else 0.0 * eye_d
    return float(torch.linalg.norm(Z1 @ Z1.transpose(-2, -1) - shift - root, dim=(-2, -1)).max())
