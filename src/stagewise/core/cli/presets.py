"""Named parameter sets of a chapter (``-p preset paper``), declared in its front matter.

A chapter's front matter may declare presets::

    stagewise:
      presets:
        paper:
          parameters: {mnist_width: 1000, mnist_steps: 8000}
          differs: what still differs from the paper at this preset
          gpu: its time on a GPU, with where that figure comes from

``stagewise run CHAPTER -p preset NAME`` runs with the preset's parameters; any other ``-p`` (or ``-f``) wins over
them, and the run folder records the parameters the run used (a preset is a shorthand, not a parameter). A chapter
that declares a parameter named ``preset`` of its own (transformer-rank's model sizes) receives it as well, through
the preset's parameters. ``stagewise params`` lists the presets.
"""
from __future__ import annotations

from typing import Any

from stagewise.core.run.parameters import ParameterError

NAME = "preset"


def declared(chapter) -> dict[str, dict[str, Any]]:
    """The chapter's presets by name: ``{"parameters": {...}, "differs": str, "gpu": str}``."""
    presets = dict(getattr(chapter, "front_matter", {}).get("presets") or {})
    return {name: {"parameters": dict(p.get("parameters") or {}), "differs": str(p.get("differs", "")),
                   "gpu": str(p.get("gpu", ""))} for name, p in presets.items()}


def expand(chapter, overrides: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """``overrides`` with ``preset`` replaced by the named preset's parameters (the other overrides win), and the
    preset's name (None without one). A chapter's own ``preset`` parameter passes through when no preset of that
    name is declared. Unknown preset: a one-line ParameterError naming the ones allowed."""
    if NAME not in overrides:
        return overrides, None
    name = str(overrides[NAME])
    presets = declared(chapter)
    if name not in presets:
        if NAME in chapter.parameters:
            return overrides, None
        allowed = ", ".join(sorted(presets)) or "none (this chapter declares no preset)"
        raise ParameterError(f"parameter preset: unknown preset {name!r} for chapter {chapter.name}; "
                             f"allowed: {allowed}")
    rest = {k: v for k, v in overrides.items() if k != NAME}
    return {**presets[name]["parameters"], **rest}, name


def describe(chapter) -> list[str]:
    """Lines for ``stagewise params``: each preset with its parameters, what differs from the paper, its GPU time."""
    lines = []
    for name, p in declared(chapter).items():
        shown = ", ".join(f"{k}={v}" for k, v in p["parameters"].items()) or "the defaults"
        lines.append(f"  preset {name}: {shown}")
        if p["differs"]:
            lines.append(f"    differs from the paper: {p['differs']}")
        if p["gpu"]:
            lines.append(f"    on a GPU: {p['gpu']}")
    return lines


def announce(chapter, name: str, cpu_seconds: float | None) -> str:
    """One line before a preset's run: its expected time on this machine's reference CPU and on a GPU."""
    p = declared(chapter)[name]
    cpu = ("no cost model" if cpu_seconds is None
           else f"about {cpu_seconds / 3600:.1f} h" if cpu_seconds >= 5400
           else f"about {cpu_seconds / 60:.0f} min" if cpu_seconds >= 120 else f"about {cpu_seconds:.0f} s")
    return (f"preset {name}: expected time {cpu} on a 2-core CPU; on a GPU: "
            + (p["gpu"] or "not measured"))
