"""Tests of stagewise.relu_orthogonal.assumption4: interpolation iff covered (Assumption 4(i)) and ties (4(ii))."""
from stagewise.relu_orthogonal import assumption4


def test_interpolation_iff_covered():
    """Rows of the mask: GD interpolates iff every point is covered, and never fits exactly the uncovered ones."""
    out = assumption4.interpolation_iff_covered(1, 4, n=16, m=3, log_inv_lam=20.0)
    assert out.kept + out.dropped == 4
    assert all(out.iff) and all(out.never_ok)
    assert all(r < 1e-6 for r in out.plateau_rel) and len(out.plateau_rel) == len(out.uncovered)


def test_tie_report():
    """Assumption 4(ii): Rademacher labels tie in line 8 in some draws and the tie is reported; continuous
    labels with the same masks never do."""
    t = assumption4.tie_experiment(1, draws=30)
    assert 0 < t.ties_rademacher < 30 and t.ties_continuous == 0
    assert t.report().startswith(f"ties in {t.ties_rademacher} of 30 Rademacher draws; first: tie at jump")
    assert t.lp.tie is not None and t.lp_continuous.tie is None
