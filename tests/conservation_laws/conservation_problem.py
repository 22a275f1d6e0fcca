"""A small instance of the chapter's problem, shared by the conservation-laws tests."""
import torch

from stagewise.conservation_laws.models import FAMILIES
from stagewise.conservation_laws.problem import init_params, make_orthogonal_data


def small_problem(name, seeds=2, n=6, d=6, width=5, depth=3, scale=0.7, seed=0):
    """(family, data, params) for family ``name`` on ``n`` orthogonal inputs in dimension ``d``."""
    g = torch.Generator().manual_seed(seed)
    family = FAMILIES[name]
    k = 2 if name == "linear" else 1
    data = make_orthogonal_data(n, d, k, g)
    return family, data, init_params(family, seeds, d, k, width, depth, scale, g)
