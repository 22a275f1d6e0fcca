"""Shared test data of the relu-orthogonal tests."""
import numpy as np


def hand_example():
    """n = 3 points, 2 positive neurons: neuron 0 active on {0, 1}, neuron 1 on {1, 2}."""
    y = np.array([3.0, 4.0, 1.0])
    s = np.array([1.0, 1.0])
    M = np.array([[1, 0], [1, 1], [0, 1]], bool)
    return y, s, M
