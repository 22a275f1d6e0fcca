"""Experiments of the mirror-flow section: Theorem 3.2(a) along the beta-ODE, and the k = 1 flow of 3.2(b).

Statements ``thm-linear-riccati-mirror`` (parts (a) and (b), with Lemma C.8), on non-whitened
data, where the beta-ODE is the gradient-flow reference.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import torch

from stagewise.linear_riccati.data import Problem
from stagewise.linear_riccati.gradient_descent import gd
from stagewise.linear_riccati.gradient_flow import beta_flow, beta_ode_field, singular_value_trajectories
from stagewise.linear_riccati.initialization import reduced_init
from stagewise.linear_riccati.mirror_flow import dual_flow_k1, rate_bound_k1
from stagewise.numerics.fits import loglog_slope
from stagewise.numerics.roundoff import numerical_rank

EPS = np.finfo(float).eps
SOLVER_RTOL = 1e-11      # relative tolerance of the dual k = 1 flow (DOP853)


@dataclass
class MirrorRun:
    """The beta-ODE's singular values ``sv_ode`` on ``times`` and the ``method`` (with the ``fallback_msg`` warning)
    that produced them; the GD -> ODE gaps ``errs`` at ``etas`` and their fitted order ``ode_slope``; GD records
    ``gd_finest`` at the smallest step; the relative mismatch of the corrected (``mirror_err``) and the printed
    (``paper_err``) mirror identity along the ODE. Controls: ``ode_slope_control``, the fitted order of the GD gaps
    to the beta-ODE with the sign of gamma I on the W2 side flipped (a wrong ODE: GD does not converge to it), and
    ``offdiag``, the largest off-diagonal entry of U_*^T beta V_* along GD at the smallest step (U_*, V_* the
    singular bases of beta_*), in units eps * steps * sigma_max(beta_*): on these non-whitened data the singular
    vectors move, so this is what Theorem C.11's test would see if the data were not whitened.

    The identities are sampled on the ODE from ``t_start`` = 1 / (8 sigma_1(X^T Y)) (then 2 t_start, 4 t_start and
    every fifth point of ``times``): there the linearization beta ~ 2 gamma t X^T Y puts sigma_1(beta) near gamma/4
    (``sigma_start``: sigma_1(beta(t_start)) / gamma, measured). The printed potential misses the identity by
    exactly gamma^2 / (gamma^2 + sigma_i^2) relative to u_i^T R v_i in mode i, so at t_start its mismatch is at
    least gamma^2 / (gamma^2 + sigma_1^2); ``paper_floor`` is half that (the floor of the sanity row). With no
    ``etas`` (GD unstable at the user's step) the GD parts are skipped: ``errs`` empty, slopes NaN."""
    times: np.ndarray
    sv_ode: np.ndarray
    method: str
    fallback_msg: str
    etas: list
    errs: list
    ode_slope: float
    gd_finest: dict
    mirror_err: float
    paper_err: float
    ode_slope_control: float
    offdiag: float
    t_start: float = float("nan")
    sigma_start: float = float("nan")
    paper_floor: float = float("nan")
    rank: int = 0


def mirror_identity(problem: Problem, gamma: float, times: np.ndarray, etas, param: str = "eta_white") -> MirrorRun:
    """Theorem 3.2(a) (``thm-linear-riccati-mirror``): integrate the beta-ODE (the closed form is refused on
    non-whitened data), compare reduced GD at ``etas`` with it, and test d/dt 1/2 asinh(sigma_i/gamma) = u_i^T R v_i
    (corrected potential) and its printed variant along the solution."""
    d, k = problem.XtY.shape
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sv_ode, method = singular_value_trajectories(problem, gamma, times)
    fallback_msg = str(caught[0].message) if caught else "none"
    beta_ode = beta_flow(problem.XtX, problem.XtY, gamma, times)
    horizon, spacing = float(times[-1]), float(times[1] - times[0])
    errs, records, res = [], [], None
    for e in etas:
        Z1, Z2 = reduced_init([gamma], d, k, device=problem.X.device)
        res = gd(problem.XtX, problem.XtY, Z1, Z2, e, int(round(horizon / e)),
                 record_every=max(1, int(round(spacing / e))), param=param)
        # GD records every round(spacing / eta) steps: compare with the ODEs at those times (they are the times of
        # ``times`` only when eta divides the spacing)
        t_rec = np.asarray(res["t"], float)
        aligned = len(t_rec) == len(times) and np.allclose(t_rec, times, rtol=0, atol=1e-9 * horizon)
        ref = beta_ode.cpu().numpy() if aligned else beta_flow(problem.XtX, problem.XtY, gamma, t_rec).cpu().numpy()
        errs.append(float(np.abs(res["beta"][:, 0] - ref).max()))
        records.append((t_rec, res["beta"][:, 0]))
    Us, Ss, Vsh = np.linalg.svd(problem.beta_star.cpu().numpy())
    # Theorem 3.2(a) is about the nonzero singular values: rank(beta) <= rank(beta_*) = min(n, k) along the flow
    r = numerical_rank(Ss, max(d, k))
    t_start = 1.0 / (8.0 * float(torch.linalg.svdvals(problem.XtY)[0]))
    early = beta_flow(problem.XtX, problem.XtY, gamma, t_start * np.array([0.0, 1.0, 2.0, 4.0]))[1:]
    sigma_start = float(torch.linalg.svdvals(early[0])[0]) / gamma
    field = beta_ode_field(problem.XtX, problem.XtY, gamma)
    mirror_err, paper_err = [], []
    for b in torch.cat([early, beta_ode[5::5]]):
        U, S, Vh = torch.linalg.svd(b, full_matrices=False)
        U, S, Vh = U[:, :r], S[:r], Vh[:r]
        bdot, R = field(b), problem.XtY - problem.XtX @ b
        sdot = torch.diagonal(U.T @ bdot @ Vh.T).cpu().numpy()
        uRv = torch.diagonal(U.T @ R @ Vh.T).cpu().numpy()
        S = S.cpu().numpy()
        lhs = sdot / (2 * np.sqrt(S ** 2 + gamma ** 2))          # d/dt of 1/2 asinh(sigma/gamma)
        mirror_err.append(np.abs(lhs - uRv).max() / np.abs(uRv).max())
        # d/dt of the paper's printed gradient: lhs minus d/dt [sigma / (2 sqrt(sigma^2 + gamma^2))]
        lhs_paper = lhs - sdot * gamma ** 2 / (2 * (S ** 2 + gamma ** 2) ** 1.5)
        paper_err.append(np.abs(lhs_paper - uRv).max() / np.abs(uRv).max())
    nan = float("nan")
    out = MirrorRun(np.asarray(times), sv_ode, method, fallback_msg, list(etas), errs,
                    loglog_slope(etas, errs) if etas else nan, res, float(max(mirror_err)), float(max(paper_err)),
                    nan, nan, t_start, sigma_start, 0.5 / (1.0 + sigma_start ** 2), r)
    out.gamma, out.records = gamma, records
    out.offdiag = offdiag_units(problem, out) if etas else nan
    return out


def gd_ode_order(problem: Problem, run: MirrorRun, w2_sign: float = -1.0) -> float:
    """Fitted order in eta of the GD -> beta-ODE gaps of ``run`` (its GD records at each step), against the ODE
    with ``w2_sign`` on the W2-side gamma I (-1: Lemma C.10; +1: the sign flipped, the control, a wrong ODE that
    GD does not approach). NaN without GD runs."""
    if not run.etas:
        return float("nan")
    errs = [float(np.abs(beta - beta_flow(problem.XtX, problem.XtY, run.gamma, t, w2_sign=w2_sign).cpu().numpy())
                  .max()) for t, beta in run.records]
    return loglog_slope(run.etas, errs)


def offdiag_units(problem: Problem, run: MirrorRun) -> float:
    """Largest off-diagonal entry of U_*^T beta V_* along GD at the smallest step of ``run`` (U_*, V_* the singular
    bases of beta_*), in units eps * steps * sigma_max(beta_*) (Theorem C.11's measure, here on non-whitened data)."""
    k = problem.XtY.shape[1]
    t, beta = run.records[-1]
    Us, Ss, Vsh = np.linalg.svd(problem.beta_star.cpu().numpy())
    return float(offdiagonal(Us.T @ beta @ Vsh.T, k) / (EPS * int(round(float(t[-1]) / run.etas[-1])) * Ss.max()))


def offdiagonal(M: np.ndarray, k: int) -> float:
    """Largest |entry| of M (..., d, k) outside the diagonal of its top k x k block: the coupling between modes that
    Theorem C.11 (static singular vectors, ``thm-linear-riccati-closed``) says is zero in the bases of beta_*."""
    M = np.array(M, float)
    idx = np.arange(k)
    M[..., idx, idx] = 0.0
    return float(np.abs(M).max())


@dataclass
class K1Run:
    """Per gamma: GD -> dual-flow gap at the smaller step (``errs``) and its eta -> eta/2 ratio (``ratios``);
    largest loss / bound for Lemma C.8's 1/t bound (``bound_1t``) and the exponential bound (``bound_exp``).
    Controls: the eta -> eta/2 ratios of the GD gaps to the flow without its time warp (``ratios_control``), the
    loss over the bound of the largest gamma, as if the rate did not depend on gamma (``bound_1t_control``), and over
    L(0) exp(-4 lambda_min t) with the factor gamma dropped (``bound_exp_control``). Every bound is raised by the
    solver's loss floor ``loss_floor`` (see :func:`k1_mirror_flow`)."""
    errs: list
    ratios: list
    bound_1t: list
    bound_exp: list
    ratios_control: list
    bound_1t_control: list
    bound_exp_control: list
    loss_floor: float = 0.0
    gammas: list = None
    times: np.ndarray = None
    losses: list = None           # loss along the dual flow, per gamma
    records: list = None          # per gamma: [(t_rec, beta) per eta]
    etas: list = None


def k1_mirror_flow(problem: Problem, gammas, etas, times: np.ndarray, param: str = "eta_white") -> K1Run:
    """Theorem 3.2(b) and Lemma C.8 (``thm-linear-riccati-mirror``, part (b)) for k = 1: integrate the dual mirror flow,
    compare reduced GD at the two ``etas`` with it, and measure the loss against the 1/t bound and against the
    exponential bound L(0) exp(-4 gamma lambda_min(X X^T) t) of the corrected convergence proof."""
    d = problem.XtY.shape[0]
    X, Y = problem.X.cpu().numpy(), problem.Y.cpu().numpy()
    XtX, Xty = problem.XtX.cpu().numpy(), problem.XtY.cpu().numpy()
    lam_min = float(np.linalg.eigvalsh((problem.X @ problem.X.T).cpu().numpy()).min())
    bnorm = float(torch.linalg.norm(problem.beta_star))
    horizon, spacing = float(times[-1]), float(times[1] - times[0])
    out = K1Run([], [], [], [], [], [], [], gammas=list(gammas), times=np.asarray(times), losses=[], records=[],
                etas=list(etas))
    # The integrated loss cannot go below the solver's accuracy: a relative error rtol in beta leaves a residual
    # of about rtol ||X||_2 ||beta_*||, so the loss has a floor of 1/2 (100 rtol ||X||_2 ||beta_*||)^2 (100: the
    # global error of the adaptive solver exceeds its local tolerance; we measured up to ~40 rtol on stiff draws).
    # A bound below that floor (e.g. exp(-4 gamma lambda_min t) ~ 1e-94 at large lambda_min) is compared with the
    # floor, not with the solver noise of the loss.
    floor = 0.5 * (100 * SOLVER_RTOL * float(np.linalg.norm(X, 2)) * bnorm) ** 2
    out.loss_floor = floor
    for g in gammas:
        b_dual = dual_flow_k1(XtX, Xty, g, times, rtol=SOLVER_RTOL)
        loss = 0.5 * ((X @ b_dual.T - Y) ** 2).sum(0)
        out.losses.append(loss)
        gaps, recs = [], []
        for e in etas:
            Z1, Z2 = reduced_init([g], d, 1, device=problem.X.device)
            res = gd(problem.XtX, problem.XtY, Z1, Z2, e, int(round(horizon / e)),
                     record_every=max(1, int(round(spacing / e))), param=param)
            t_rec = np.asarray(res["t"], float)      # the flows at GD's record times (see mirror_identity)
            aligned = len(t_rec) == len(times) and np.allclose(t_rec, times, rtol=0, atol=1e-9 * horizon)
            ref = b_dual if aligned else dual_flow_k1(XtX, Xty, g, t_rec, rtol=SOLVER_RTOL)
            gaps.append(float(np.abs(res["beta"][:, 0, :, 0] - ref).max()))
            recs.append((t_rec, res["beta"][:, 0, :, 0]))
        out.records.append(recs)
        if gaps:                             # no etas: GD skipped (unstable at the user's step)
            out.errs.append(gaps[-1]); out.ratios.append(gaps[0] / gaps[-1])
    out.bound_1t, out.bound_exp = k1_bound_1t(problem, out), k1_bound_exp(problem, out)
    return out


def k1_ratios(problem: Problem, run: K1Run, warp: bool = False) -> list[float]:
    """eta -> eta/2 ratios of the GD -> dual-flow gaps of ``run``, one per gamma, recomputed against the flow with
    (``warp`` True, Theorem 3.2(b)) or without its time warp (False: the control, a wrong flow)."""
    XtX, Xty = problem.XtX.cpu().numpy(), problem.XtY.cpu().numpy()
    out = []
    for g, recs in zip(run.gammas, run.records):
        gaps = [float(np.abs(beta - dual_flow_k1(XtX, Xty, g, t, rtol=SOLVER_RTOL, warp=warp)).max())
                for t, beta in recs]
        if gaps:
            out.append(gaps[0] / gaps[-1])
    return out


def k1_bound_1t(problem: Problem, run: K1Run, rate_gamma: float | None = None) -> list[float]:
    """Largest loss / (Lemma C.8's bound D_psi / (sqrt(2 gamma) t) + loss floor) along the dual flow, per gamma;
    ``rate_gamma`` puts that gamma in the bound for every run (the control: the largest gamma's bound, as if the rate
    did not depend on gamma)."""
    bnorm = float(torch.linalg.norm(problem.beta_star))
    t = run.times[1:]
    return [float((loss[1:] / (rate_bound_k1(bnorm, g if rate_gamma is None else rate_gamma, t)
                               + run.loss_floor)).max()) for g, loss in zip(run.gammas, run.losses)]


def k1_bound_exp(problem: Problem, run: K1Run, gamma_in_rate: bool = True) -> list[float]:
    """Largest loss / (L(0) exp(-4 gamma lambda_min(X X^T) t) + loss floor) along the dual flow, per gamma;
    ``gamma_in_rate`` False drops the factor gamma from the rate (the control)."""
    lam_min = float(np.linalg.eigvalsh((problem.X @ problem.X.T).cpu().numpy()).min())
    return [float((loss / (loss[0] * np.exp(-4 * (g if gamma_in_rate else 1.0) * lam_min * run.times)
                           + run.loss_floor)).max()) for g, loss in zip(run.gammas, run.losses)]


def k1_ratio_extreme(problem: Problem, run: K1Run, which: str, warp: bool = False) -> float:
    """The smallest (``which`` "min") or largest ("max") of :func:`k1_ratios` (``warp`` False: the control)."""
    ratios = k1_ratios(problem, run, warp)
    return float(min(ratios) if which == "min" else max(ratios)) if ratios else float("nan")


def k1_bound_1t_max(problem: Problem, run: K1Run, rate_gamma: float | None = None) -> float:
    """Largest of :func:`k1_bound_1t` over the gammas."""
    return float(max(k1_bound_1t(problem, run, rate_gamma)))


def k1_bound_exp_max(problem: Problem, run: K1Run, gamma_in_rate: bool = True) -> float:
    """Largest of :func:`k1_bound_exp` over the gammas."""
    return float(max(k1_bound_exp(problem, run, gamma_in_rate)))
