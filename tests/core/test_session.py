"""The notebook side (stagewise.core.run.session): named random streams are reproducible and independent."""
import numpy as np
import torch

from stagewise.core.run.device import stream_seed
from stagewise.core.run.session import Run


def _run(seed: int) -> Run:
    return Run("smoke-test", {"seed": seed}, torch.device("cpu"), __import__("pathlib").Path("."))


def test_streams_are_reproducible_and_independent_of_each_other():
    a, b = _run(0), _run(0)
    assert torch.equal(torch.randn(5, generator=a.generator("data")), torch.randn(5, generator=b.generator("data")))
    assert not torch.equal(torch.randn(5, generator=a.generator("data")), torch.randn(5, generator=a.generator("init")))
    assert np.array_equal(a.numpy_rng("x").normal(size=3), b.numpy_rng("x").normal(size=3))
    assert a.stream_seed("data") != _run(1).stream_seed("data")  # the run's seed matters
    assert 0 <= stream_seed(2**31 - 1, "data") < 2**63
