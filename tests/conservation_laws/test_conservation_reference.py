"""The plain reference loop of the benchmark gives the batched code's numbers
(gradient descent of Proposition ``prf:thm-conservation-laws-one-step``, one problem at a time)."""
import torch

from conservation_problem import small_problem
from stagewise.conservation_laws.gradient_descent import batch_over_step_sizes
from stagewise.conservation_laws.problem import loss
from stagewise.conservation_laws.reference import gradient_descent_reference
from stagewise.numerics.flows import gradient_descent_batched
from stagewise.numerics.params import flatten_batched


def test_reference_loop_equals_batched_gradient_descent():
    """Rows (step size major, seed minor) of the reference equal the batched final parameters."""
    family, data, params = small_problem("relu", seeds=2)
    etas = [0.1, 0.05]
    batched, eta = batch_over_step_sizes(params, etas)
    _, records = gradient_descent_batched(batched, lambda p: loss(family, p, data), eta, 1.0,
                                          flatten_batched, n_records=1)
    reference = gradient_descent_reference(family, data, params, etas, 1.0)
    assert reference.shape == records[-1].shape
    assert torch.allclose(reference, records[-1], atol=1e-13, rtol=0)
