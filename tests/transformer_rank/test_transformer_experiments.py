"""Tests of stagewise.transformer_rank.experiments (helpers of the claims of Assumption asm-transformer-rank-claims)."""
from stagewise.transformer_rank.experiments import quarter_index


def test_quarter_index():
    """Claim (b) compares the end with the checkpoint nearest a quarter of training."""
    assert quarter_index([0, 1, 5, 24, 50, 100]) == 3
