"""What the chapter's figures plot, taken out of the experiments' results as plain arrays (the figures' data
sidecars). The drawing itself is in :mod:`stagewise.conservation_laws.figures`, which never sees torch."""
from __future__ import annotations

from typing import Any

import numpy as np

from stagewise.conservation_laws.drift_coefficient import CoefficientResult, record_times
from stagewise.conservation_laws.drift_experiment import DescentResult
from stagewise.conservation_laws.flow_experiment import FlowResult
from stagewise.conservation_laws.layer_growth import LayerGrowth


def drift_vs_time(descent: DescentResult, flow: FlowResult, coefficient: CoefficientResult | None = None,
                  horizon: float | None = None) -> dict[str, Any]:
    """Per family: the time axis, the largest change of any invariant since initialization per step size (first
    seed), the same for gradient flow, and (families of ``coefficient``) the first-order prediction
    ``eta max_j |C_j(t)|`` per step size, ``C`` the flow's integral of ``Q(grad L)``."""
    panels = {}
    for i, (name, result) in enumerate(descent.families.items()):
        tr = result.trajectory
        panel: dict[str, Any] = {"name": name.replace("_", " "), "etas": np.asarray(result.etas, dtype=float)}
        if tr is not None and result.etas:
            panel["times"] = np.asarray(tr.times[1:], dtype=float)
            panel["change"] = np.stack([(tr.invariants[:, e, 0] - tr.invariants[:1, e, 0]).abs().amax(-1).cpu()
                                        .numpy()[1:] for e in range(len(result.etas))])
        if name in flow.trajectories:
            ftr = flow.trajectories[name]
            change = (ftr.invariants[:, 0, 0] - ftr.invariants[:1, 0, 0]).abs().amax(-1).cpu().numpy()
            panel["flow_times"] = np.asarray(ftr.times[1:], dtype=float)
            panel["flow_change"] = np.maximum(change[1:], 1e-17)
        if coefficient is not None and name in coefficient.flows and tr is not None:
            predicted = []
            for eta in result.etas:
                C, _ = coefficient.flows[name].at(record_times(eta, horizon, len(tr.times) - 1))
                predicted.append(eta * C[1:, 0].abs().amax(-1).cpu().numpy())
            panel["predicted"] = np.stack(predicted)
        panels[f"p{i}"] = panel
    return {"panels": panels, "all_etas": np.asarray(sorted(set(descent.etas), reverse=True), dtype=float)}


def drift_vs_eta(descent: DescentResult, horizon: float) -> dict[str, Any]:
    """Per family that ran: step sizes, the seed-averaged drift over the horizon and the mean per-seed slope;
    a slope-1 reference line below the curves."""
    etas = sorted(set(descent.etas), reverse=True)
    families = {}
    for i, (name, result) in enumerate(descent.families.items()):
        if not result.etas:
            continue
        slopes = [s for s in result.slopes if np.isfinite(s)]
        families[f"f{i}"] = {"name": name.replace("_", " "), "index": i, "etas": np.asarray(result.etas, dtype=float),
                             "drift": np.asarray(result.drift.mean(1), dtype=float),
                             "slope": float(np.mean(slopes)) if slopes else None}
    data: dict[str, Any] = {"families": families, "etas": np.asarray(etas, dtype=float), "horizon": float(horizon)}
    base = next((r for r in (descent.families.get("relu"), *descent.families.values()) if r is not None and r.etas),
                None)
    if base is not None:
        data["reference"] = 0.3 * base.drift.mean(1)[-1] * np.asarray(etas, dtype=float) / base.etas[-1]
    return data


def layer_norms(growth: LayerGrowth | None) -> dict[str, Any]:
    """Each layer's squared Frobenius norm minus its initial value against time (nothing when no step size ran)."""
    if growth is None:
        return {"ran": False}
    return {"ran": True, "times": np.asarray(growth.times, dtype=float), "growth": np.asarray(growth.growth, dtype=float)}
