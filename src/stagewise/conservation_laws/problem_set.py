"""The chapter's problem set: the five networks of :data:`~stagewise.conservation_laws.models.FAMILIES`, each on
its own orthogonal data with ``n_seeds`` Gaussian initializations (section "The experiment"), shared by every
experiment of the chapter."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from stagewise.conservation_laws.models import FAMILIES, Family, Params
from stagewise.conservation_laws.problem import Data, init_params, make_orthogonal_data


@dataclass(frozen=True)
class Problems:
    """The five networks of :data:`~stagewise.conservation_laws.models.FAMILIES`, each with its
    data and ``n_seeds`` initializations (batched), on the run's device."""

    families: dict[str, Family]
    data: dict[str, Data]
    params0: dict[str, Params]

    @property
    def homogeneous(self) -> list[str]:
        """Names of the families the theorem covers (all but ``tanh``)."""
        return [name for name, family in self.families.items() if family.homogeneous]


def build_problems(n_seeds: int, n_samples: int, input_dim: int, width: int, depth: int, init_scale: float,
                   data_generator: torch.Generator, init_generator: torch.Generator,
                   device: torch.device | str = "cpu") -> Problems:
    """Orthogonal data (two outputs for the linear network, so that its invariant is a full
    matrix) and Gaussian initial weights for every family; drawn on the CPU, then moved."""
    data, params0 = {}, {}
    for name, family in FAMILIES.items():
        k = 2 if name == "linear" else 1
        d = make_orthogonal_data(n_samples, input_dim, k, data_generator)
        data[name] = Data(d.X.to(device), d.Y.to(device))
        params = init_params(family, n_seeds, input_dim, k, width, depth, init_scale, init_generator)
        params0[name] = [p.to(device) for p in params]
    return Problems(dict(FAMILIES), data, params0)
