"""Numerical helpers used by more than one chapter, each defined once.

==============  ======================================================================
``flows``       gradient flow (adaptive ODE) and batched gradient descent; the one
                divergence error (:class:`~stagewise.numerics.flows.DivergenceError`)
``fits``        log-log slopes, 1/log(1/scale) extrapolation, level crossings
``spectra``     stable rank and the non-top spectral fraction
``datasets``    the image and text data sets (digits, shapes, CIFAR, MNIST subset, pydoc)
``params``      lists of parameter tensors as flat vectors (for ODE solvers) and back
==============  ======================================================================
"""
