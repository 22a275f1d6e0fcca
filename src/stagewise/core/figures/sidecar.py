"""A figure's data sidecar: what was plotted, so that the figure can be drawn again in any style without the run.

Next to ``figures/<stem>.{pdf,svg,png}`` a run writes

- ``<stem>.npz``: every array the render function plots (NumPy's format, no pickles);
- ``<stem>.json``: the figure's provenance (as before: chapter, commit, parameters, seed, device) and, under
  ``"sidecar"``: the render function (``module:function``), the caption, the alt text, the claim the figure
  supports (a theorem label of the chapter), labels and units, the style it was drawn in, the small values
  (numbers, strings, lists of them) and, for each array, its shape, dtype and a hash of its bytes.

:func:`read` checks the pair against each other and says in one line what is wrong (missing, truncated, an array
that does not match its description), so that ``stagewise figure`` never draws a silently wrong figure.

Nested dictionaries are allowed in the data: keys are joined with ``/`` in the files and split again on reading.
"""
from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

SIDECAR_VERSION = 1
SEP = "/"


class SidecarError(ValueError):
    """A sidecar that is missing, unreadable or inconsistent; the message is one line and names the file."""


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if not isinstance(key, str) or not key or SEP in key:
            raise SidecarError(f"figure data: key {key!r} must be a non-empty string without {SEP!r}")
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, name + SEP))
        else:
            flat[name] = value
    return flat


def _unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in flat.items():
        node = out
        *parents, leaf = name.split(SEP)
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return out


def _is_small(value: Any) -> bool:
    """A value kept in the JSON: a number, a string, a bool, None, or a (nested) list of them that is not
    numeric (numeric lists become arrays, so that their dtype is kept)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return False                                  # a numeric list: an array, so that its dtype is kept
        return all(_is_small(v) for v in value)
    return False


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def split(data: Mapping[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """(arrays for the .npz, small values for the JSON); anything else is refused with its key."""
    arrays, values = {}, {}
    for name, value in _flatten(data).items():
        if isinstance(value, np.generic):
            value = value.item()
        if _is_small(value):
            values[name] = list(value) if isinstance(value, tuple) else value
            continue
        array = np.asarray(value)
        if array.dtype == object or array.dtype.kind not in "biufcUSM":
            raise SidecarError(f"figure data {name!r}: {type(value).__name__} is neither an array of numbers or "
                               "strings nor a number, string or list of them")
        arrays[name] = array
    return arrays, values


def write(directory: Path, stem: str, data: Mapping[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``<stem>.npz`` and return the ``"sidecar"`` entry of ``<stem>.json`` (the caller writes the JSON
    with the provenance, so that the pair is one file as before)."""
    arrays, values = split(data)
    Path(directory).mkdir(parents=True, exist_ok=True)
    path = Path(directory) / f"{stem}.npz"
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **arrays)
    return {"version": SIDECAR_VERSION, **meta, "data": f"{stem}.npz", "values": values,
            "arrays": {name: {"shape": list(a.shape), "dtype": a.dtype.str, "sha256": _digest(a)}
                       for name, a in sorted(arrays.items())}}


@dataclass
class FigureData:
    """One figure's sidecar, read back and checked."""

    stem: str
    meta: dict[str, Any]          # the whole JSON (provenance and "sidecar")
    data: dict[str, Any]          # arrays and values, nested as the run gave them

    @property
    def sidecar(self) -> dict[str, Any]:
        return self.meta["sidecar"]

    @property
    def renderer(self) -> str:
        return self.sidecar["render"]

    @property
    def caption(self) -> str:
        return self.sidecar.get("caption", "")


def read(directory: Path, stem: str) -> FigureData:
    """Read and check ``<stem>.json`` and ``<stem>.npz`` in ``directory``."""
    directory = Path(directory)
    jpath = directory / f"{stem}.json"
    if not jpath.is_file():
        raise SidecarError(f"{jpath}: no such sidecar (was the figure made by this version of stagewise?)")
    try:
        meta = json.loads(jpath.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SidecarError(f"{jpath}: not valid JSON, truncated or damaged ({exc.msg if hasattr(exc, 'msg') else exc})")
    side = meta.get("sidecar") if isinstance(meta, dict) else None
    if not isinstance(side, dict) or "render" not in side or "arrays" not in side:
        raise SidecarError(f"{jpath}: holds provenance but no figure data (made before figures had sidecars; "
                           "run the chapter again)")
    if side.get("version") != SIDECAR_VERSION:
        raise SidecarError(f"{jpath}: sidecar version {side.get('version')!r}, this stagewise reads {SIDECAR_VERSION}")
    return FigureData(stem, meta, read_data(directory, stem, side, jpath.name))


def read_data(directory: Path, stem: str, side: Mapping[str, Any], described_in: str = "its sidecar") -> dict[str, Any]:
    """The data of ``<stem>.npz`` with the small values of the sidecar entry ``side``, checked against it."""
    npath = Path(directory) / side.get("data", f"{stem}.npz")
    if not npath.is_file():
        raise SidecarError(f"{npath}: the figure's data file is missing")
    try:
        with np.load(npath, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise SidecarError(f"{npath}: unreadable, truncated or damaged ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})")
    described = side["arrays"]
    if set(arrays) != set(described):
        missing, extra = sorted(set(described) - set(arrays)), sorted(set(arrays) - set(described))
        raise SidecarError(f"{npath}: arrays do not match {described_in}"
                           + (f"; missing {', '.join(missing)}" if missing else "")
                           + (f"; not described {', '.join(extra)}" if extra else ""))
    for name, want in described.items():
        got = arrays[name]
        if list(got.shape) != want["shape"] or got.dtype.str != want["dtype"] or _digest(got) != want["sha256"]:
            raise SidecarError(f"{npath}: array {name!r} is {got.dtype.str}{list(got.shape)}, {described_in} describes "
                               f"{want['dtype']}{want['shape']}" + ("" if list(got.shape) != want["shape"]
                                                                    or got.dtype.str != want["dtype"]
                                                                    else " with other values"))
    return _unflatten({**arrays, **side.get("values", {})})


def stems(directory: Path) -> list[str]:
    """The figures of a run's ``figures/`` folder that have a sidecar, in file-name order."""
    out = []
    for jpath in sorted(Path(directory).glob("*.json")):
        try:
            meta = json.loads(jpath.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError, OSError):
            out.append(jpath.stem)       # listed, so that reading it says what is wrong
            continue
        if isinstance(meta, dict) and ("sidecar" in meta or "figure" in meta):
            out.append(jpath.stem)
    return out
