"""Deliberately broken functions for tests/relu_orthogonal/test_relu_orthogonal_mutation.py."""


def gradient_flow_rates(r, eta):
    """Algorithm 1, line 2, without the step-size correction: the rate r instead of log(1 + eta r)/eta, so the
    'GD-corrected' prediction silently becomes the gradient-flow one."""
    return r
