"""Deliberately broken functions for tests/escape_speed/test_escape_mutation.py."""
import torch


def frobenius_linear_speed(X, G, original):
    """Proposition "Closed forms" (ii) with a wrong closed form: the one-layer law |G X^T|_F instead of sigma_max."""
    return float(torch.linalg.matrix_norm(G @ X.T))


def wrong_neuron_deepen(Ws, X, G, k=1, choose="best", original=None):
    """Proposition 3.2's construction keeping the neuron with the largest (worst) contribution."""
    return original(Ws, X, G, k=k, choose="worst")
