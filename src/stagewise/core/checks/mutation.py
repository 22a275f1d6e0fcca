"""Mutation hook for the tests: replace a package function inside a chapter's kernel.

A chapter runs in its own kernel process, where a test's ``monkeypatch`` cannot reach. A
mutation test sets ``STAGEWISE_MUTATION`` to ``MODULE:NAME=FILE:REPLACEMENT`` (several separated
by ``;``): :func:`stagewise.start` then imports ``MODULE`` and sets its attribute ``NAME`` to
``REPLACEMENT`` from the Python file ``FILE`` before the chapter imports anything else, so a
chapter that uses a broken formula (a wrong stage time, a flipped sign, training disabled)
must fail its checks in ``--strict`` mode. The replacement receives the original as the
keyword argument ``original`` when it accepts one. Nothing happens without the variable.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os

MUTATION_ENV = "STAGEWISE_MUTATION"


def _load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(f"stagewise_mutant_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{MUTATION_ENV}: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def apply_from_env() -> list[str]:
    """Apply the mutations named in ``STAGEWISE_MUTATION``; returns what was replaced."""
    applied = []
    for item in filter(None, (s.strip() for s in os.environ.get(MUTATION_ENV, "").split(";"))):
        target, _, source = item.partition("=")
        module_name, _, attr = target.partition(":")
        path, _, replacement_name = source.rpartition(":")
        module = importlib.import_module(module_name)
        original = getattr(module, attr)
        replacement = _load(path, replacement_name)
        if "original" in inspect.signature(replacement).parameters:
            replacement = functools.partial(replacement, original=original)
        setattr(module, attr, replacement)
        applied.append(f"{module_name}.{attr}")
    return applied
