"""Parameter grids for ``stagewise sweep``: a YAML file expanded into points, each validated like a run.

Grid file (YAML mapping)::

    eta: [0.01, 0.02, 0.04]        # a list: one axis of the product
    steps: 200                     # a scalar: the same value at every point
    zip:                           # optional: groups whose lists vary together (equal lengths)
      - {alpha: [1e-3, 1e-4], horizon: [50, 80]}
    seeds: 4                       # shorthand for seed: [0, 1, 2, 3]; or a list such as [0, 7]
    ci: [0, 3]                     # optional, atlas files: the points (0-based, in sweep order) CI runs
    exercises: [...]               # optional, atlas files: the chapter's exercises (stagewise.core.sweep.atlas)

Points are the product of the axes (in file order, ``seeds`` last). Every point goes through the same
validation as ``stagewise run`` before anything runs, so one bad point refuses the whole sweep.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

from stagewise.core.run.parameters import ParameterError, load_parameter_file, shown
from stagewise.core.run.runner import prepare

_VALIDATED: dict[tuple[str, str, int, str], dict[str, Any]] = {}


def validated(chapter: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The complete parameters of a point, validated as a run validates them (:func:`prepare`); remembered for the
    life of the process by (chapter, its source and that file's modification time, overrides), since a validation
    can cost seconds (relu-orthogonal draws its instances) and the atlas reads the same points several times
    (its grid, its CI points, its exercises). A point that fails raises every time."""
    import copy
    from stagewise.core.run.registry import get_chapter
    source = get_chapter(chapter).source
    key = (chapter, str(source), source.stat().st_mtime_ns, json.dumps(overrides, sort_keys=True, default=str))
    if key not in _VALIDATED:
        _VALIDATED[key] = prepare(chapter, overrides)[1]
    return copy.deepcopy(_VALIDATED[key])


RESERVED = ("zip", "seeds", "ci", "exercises")


def _axis_values(name: str, value: Any) -> list[Any]:
    if isinstance(value, list):
        if not value:
            raise ParameterError(f"grid: {name} has an empty list")
        return value
    return [value]


def axes(grid: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The grid's axes: each a list of partial assignments ``{name: value, ...}``."""
    out = []
    for name, value in grid.items():
        if name in RESERVED:
            continue
        out.append([{name: v} for v in _axis_values(name, value)])
    groups = grid.get("zip", [])
    if not isinstance(groups, list) or not all(isinstance(g, dict) and g for g in groups):
        raise ParameterError("grid: zip must be a list of mappings, each NAME: [values...] of equal lengths")
    for group in groups:
        lists = {name: _axis_values(name, v) for name, v in group.items()}
        lengths = {len(v) for v in lists.values()}
        if len(lengths) != 1:
            detail = ", ".join(f"{n}: {len(v)}" for n, v in lists.items())
            raise ParameterError(f"grid: the lists of a zip group must have equal lengths ({detail})")
        out.append([dict(zip(lists, values)) for values in zip(*lists.values())])
    if "seeds" in grid:
        seeds = grid["seeds"]
        if isinstance(seeds, bool) or not (isinstance(seeds, int) and seeds >= 1 or isinstance(seeds, list)):
            raise ParameterError(f"grid: seeds must be a count (>= 1) or a list of seeds, got {shown(seeds)}")
        out.append([{"seed": s} for s in (range(seeds) if isinstance(seeds, int) else seeds)])
    return out


def expand(grid: dict[str, Any]) -> list[dict[str, Any]]:
    """Every point of the grid, as parameter overrides."""
    names = [n for axis in axes(grid) for n in axis[0]]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ParameterError(f"grid: {', '.join(repeated)} given more than once")
    return [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*axes(grid))]


def point_id(parameters: dict[str, Any]) -> str:
    """Short stable name of a point: 12 hex digits of the SHA-256 of its complete parameters."""
    return hashlib.sha256(json.dumps(parameters, sort_keys=True, default=str).encode()).hexdigest()[:12]


def load(chapter: str, path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Read and validate a grid file: ``(grid, points)`` where each point holds ``id``, ``overrides`` and the
    complete validated ``parameters``; a :class:`ParameterError` naming the point if any point is bad."""
    grid = load_parameter_file(path)
    points, seen = [], set()
    for overrides in expand(grid):
        try:
            parameters = validated(chapter, overrides)
        except ParameterError as err:
            raise ParameterError(f"grid point {json.dumps(overrides, default=str)}: {err}") from None
        pid = point_id(parameters)
        if pid not in seen:
            seen.add(pid)
            points.append({"id": pid, "overrides": overrides, "parameters": parameters})
    return grid, points
