"""Tests of stagewise.transformer_rank.head_extraction: the extraction checks of eq. (1) and Proposition
prop-transformer-rank-bound on the trained ViT, and their control (factors swapped)."""
import pytest

from stagewise.transformer_rank.head_extraction import extraction_checks, swapped_extraction_error
from transformer_problem import tiny_runs


@pytest.fixture(scope="module")
def runs():
    return tiny_runs()


def test_extraction_checks_on_trained_vit(runs):
    """Eq. (1) on the trained weights; the wrong extraction (factors swapped) is caught."""
    vit, _ = runs
    ex = extraction_checks(vit)
    assert ex.error < 1e-4 and ex.rank_tail < 1e-10 and ex.output_error < 1e-4
    assert ex.error_swapped > 1e-2 and ex.output_error_swapped > 1e-2
    assert swapped_extraction_error(vit) == pytest.approx(ex.error_swapped)
    assert swapped_extraction_error(vit, output=True) == pytest.approx(ex.output_error_swapped)
