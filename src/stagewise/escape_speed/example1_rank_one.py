"""Example 1 of the escape-speed chapter, parts (a) and (b): the rank-one scan and its gaps (paper Sec. 4, Fig. 5).

Proposition "Example 1" on eight points on the circle: every rank-one network is at most ``sqrt(2) - 1`` fast (Eq. 6,
reached at angles that are multiples of ``pi/4``), and a rank-two depth-3 network reaches ``1/2`` (Eq. 2). The scan
of the rank-one speed over the angle, and the gaps the chapter checks with their controls.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.escape_speed.ascent import projected_ascent
from stagewise.escape_speed.closed_forms import neuron_speed, rank_one_speed_eq6, rank_two_construction, shallow_speed
from stagewise.escape_speed.network import init_sphere, speed

RANK_ONE_SPEED = math.sqrt(2) - 1     # Proposition "Example 1" (a): the best rank-one speed


@dataclass
class RankOneScan:
    """Proposition "Example 1" on an angle grid: the direct rank-one speed, Eq. (6), and the rank-two speed."""
    phi: np.ndarray              # first-layer angles
    direct: np.ndarray           # |G sigma(X^T w_phi)| (Proposition "Closed forms" (iv))
    eq6: np.ndarray              # paper Eq. (6)
    best_speed: float            # s*(2) by the exact angle search (incl. hinge angles)
    best_angle: float
    rank_two_speed: float        # speed of the construction of Eq. (2)

    @property
    def eq6_gap(self) -> float:
        """``max |direct - Eq. (6)|`` over the grid."""
        return float(np.abs(self.direct - self.eq6).max())

    @property
    def angle_offset(self) -> float:
        """Distance of the best angle from the nearest multiple of ``pi/4``, in units of ``pi/4``."""
        return pi4_offset(self.best_angle)


def pi4_offset(angle: float) -> float:
    """Distance of ``angle`` from the nearest multiple of ``pi/4``, in units of ``pi/4`` (0 to 1/2)."""
    q = angle / (math.pi / 4)
    return abs(q - round(q))


def eq6_gap(scan: "RankOneScan", period: float) -> float:
    """``max |direct - Eq. (6)|`` over the scan's angle grid, Eq. (6) evaluated with ``xi = phi mod period``
    (``pi/4`` is the paper's; another period is a wrong closed form, the control of the chapter's check)."""
    return float(np.abs(scan.direct - rank_one_speed_eq6(scan.phi, period)).max())


def rank_one_gap(X: torch.Tensor, G: torch.Tensor, hinges: bool = True) -> float:
    """``|s*(2) - (sqrt(2) - 1)|`` with ``s*(2)`` from the angle search of
    :func:`~stagewise.escape_speed.closed_forms.shallow_speed`; ``hinges=False`` leaves out the exact hinge
    angles (the search then misses the cusp maxima by the grid spacing: the control)."""
    return abs(shallow_speed(X, G, hinges=hinges)[0] - RANK_ONE_SPEED)


def solver_rank_one_gap(X: torch.Tensor, G: torch.Tensor, restarts: int, steps: int, eta: float, eta_final: float,
                        generator: torch.Generator) -> float:
    """``|s_hat - (sqrt(2) - 1)|`` with ``s_hat`` the best of ``restarts`` rank-one networks (depth 2, one neuron)
    found by projected ascent: a numerical maximum in place of the exact cusp search (the control; it stops a few
    final steps short of the cusp)."""
    W0 = init_sphere(X.shape[0], [1], G.shape[0], restarts, generator, X.device)
    return abs(float(projected_ascent(W0, X, G, steps, eta, eta_final).speeds.max()) - RANK_ONE_SPEED)


def best_angle_offset(X: torch.Tensor, G: torch.Tensor) -> float:
    """Distance of the best single-neuron angle of ``(X, G)`` from a multiple of ``pi/4`` (units of ``pi/4``)."""
    return pi4_offset(shallow_speed(X, G)[1])


def construction_gap(X: torch.Tensor, G: torch.Tensor, sign: float = -1.0) -> float:
    """``|speed of Eq. (2)'s construction - 1/2|`` with ``W_3 = [sign]`` (the paper prints ``sign = +1``)."""
    return abs(float(speed([w.to(X.device) for w in rank_two_construction(sign)], X, G)[0]) - 0.5)


def rank_one_scan(X: torch.Tensor, G: torch.Tensor, n_angles: int = 20001) -> RankOneScan:
    """Proposition "Example 1" (a) and (b) on the data ``(X, G)`` of :func:`~stagewise.escape_speed.problems.example1_data`."""
    phi = np.linspace(0, 2 * np.pi, n_angles)
    best, angle = shallow_speed(X, G)
    rank2 = [w.to(X.device) for w in rank_two_construction()]
    return RankOneScan(phi, neuron_speed(phi, X, G), rank_one_speed_eq6(phi), best, angle,
                       float(speed(rank2, X, G)[0]))
