"""The drift measure of Theorem ``prf:thm-conservation-laws-balancedness`` and Proposition
``prf:thm-conservation-laws-one-step``: the largest change of any invariant since time 0."""
import torch

from stagewise.conservation_laws.trajectory import max_drift


def test_max_drift_is_largest_change_since_time_zero():
    """max_t max_j |I_j(t) - I_j(0)| per problem, from records of shape (T, B, K)."""
    records = torch.zeros(3, 2, 2, dtype=torch.float64)
    records[:, 0, 1] = torch.tensor([1.0, 0.5, 3.0])     # problem 0: changes by up to 2
    records[:, 1, 0] = torch.tensor([-1.0, -1.25, -1.0])  # problem 1: changes by up to 0.25
    assert max_drift(records).tolist() == [2.0, 0.25]
