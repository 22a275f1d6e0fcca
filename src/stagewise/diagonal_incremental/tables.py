"""The chapter's table of Algorithm 1's stages (display only: every number comes from the stages)."""
from __future__ import annotations

from stagewise.diagonal_incremental.algorithm import Stage
from stagewise.core.checks.tables import markdown_table


def stage_table(stages: list[Stage], d: int):
    """Algorithm 1's stages: time, new coordinate (KQ or VO and its index), sign, plateau loss, race
    margin (Assumption 4.3), restricted-Hessian eigenvalue (Assumption 4.4), stationarity."""
    def kind(i):
        return f"KQ {i}" if i < d else f"VO {i - d}"
    rows = [[s.k, f"{s.T:.4f}", kind(s.coordinate), "+" if s.sign > 0 else "−", f"{s.loss:.5f}", f"{s.margin:.3f}",
             f"{s.hessian_min:.3f}", f"{s.stationarity:.1e}"] for s in stages[1:]]
    return markdown_table(["stage $k$", "$T_k$", "new coordinate", "sign", "$\\mathcal L(\\theta^k)$", "margin",
                           "$\\lambda_{\\min}(H_{S_k})$", "$\\max_{S_k}\\lvert g\\rvert$"], rows)
