"""Tests of stagewise.relu_orthogonal.assumption4: interpolation iff covered (Assumption 4(i)) and ties (4(ii))."""
from stagewise.relu_orthogonal import assumption4


def test_interpolation_iff_covered():
    """Rows of the mask: GD interpolates iff every point is covered, and never fits exactly the uncovered ones."""
    out = assumption4.interpolation_iff_covered(1, 4, n=16, m=3, log_inv_lam=20.0)
    assert out.kept + out.dropped == 4
    assert all(out.iff) and all(out.never_ok)
    assert all(r < 1e-6 for r in out.plateau_rel) and len(out.plateau_rel) == len(out.uncovered)


def test_tie_report():
    """Assumption 4(ii): Rademacher labels tie in line 8 and the tie is reported; continuous labels do not."""
    found = [assumption4.tie_experiment(seed) for seed in range(5)]
    assert any(t.lp.tie is not None for t in found)
    for t in found:
        assert t.report().startswith("tie at jump") == (t.lp.tie is not None)
        assert t.lp_continuous.tie is None
