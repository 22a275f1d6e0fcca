"""A chapter's catalogue of realistic bugs, and the hook that installs one of them in a chapter's kernel.

Each chapter package has a module ``bugs`` with ``BUGS``, a list of :class:`Bug`: a package function of the
chapter's *experiment* or *measurement* code (the training loop, the initialization, the solver, the measure)
replaced by a deliberately broken version, written as a plausible slip (a wrong constant or exponent, a sign
error, an off-by-one step, the wrong initialization scale, fewer steps than stated, training on a subset, a
solver tolerance 1000x looser, the initial weights in place of the final ones, two arguments swapped). The
replacement's docstring says what the bug is and why it is plausible; it receives the original function as
the keyword ``original``. Running a catalogue through its chapter (the mutation matrix) is
:mod:`stagewise.core.sweep.power`.

The chapter is looked up with the registry the caller passes (``lookup``, :func:`stagewise.core.run.registry.
get_chapter` by default at the call sites): ``checks`` imports nothing else of ``core``.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
from dataclasses import dataclass
from typing import Any, Callable

BUG_ENV = "STAGEWISE_BUG"
#: What kind of slip a bug is (the issue's catalogue of realistic bugs, and two more).
CATEGORIES = ("wrong constant or exponent", "sign error", "off-by-one", "wrong initialization scale", "fewer steps",
              "training on a subset", "looser solver", "initial weights for final", "swapped arguments",
              "wrong measure", "wrong data")
MIN_BUGS = 8


class CatalogueError(ValueError):
    pass


@dataclass(frozen=True)
class Bug:
    """One realistic bug: ``target`` (``package.module:function``) is replaced by ``replacement``."""

    name: str
    target: str
    replacement: Callable[..., Any]
    category: str
    ci: bool = False            # the bug the test suite runs (one per chapter)

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.replacement) or ""

    def install(self) -> None:
        module_name, _, attr = self.target.partition(":")
        module = importlib.import_module(module_name)
        original = getattr(module, attr)
        replacement = self.replacement
        if "original" in inspect.signature(replacement).parameters:
            replacement = functools.partial(replacement, original=original)
            functools.update_wrapper(replacement, self.replacement)
        setattr(module, attr, replacement)


def package_of(chapter: str) -> str:
    return "stagewise." + chapter.replace("-", "_")


def _catalogue_module(spec):
    """``stagewise.<package>.bugs``, or the file named in the chapter's front matter (``bugs: path.py``, relative
    to the chapter: the tests' smoke-test chapter has no package). ``spec``: the chapter (its registry entry)."""
    chapter = spec.name
    named = spec.front_matter.get("bugs")
    if named:
        path = (spec.source.parent / named).resolve()
        loader = importlib.util.spec_from_file_location(f"stagewise_bugs_{chapter.replace('-', '_')}", path)
        if loader is None or loader.loader is None or not path.is_file():
            raise CatalogueError(f"{chapter}: bug catalogue {path} not found")
        module = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(package_of(chapter) + ".bugs")
    except ModuleNotFoundError as err:
        raise CatalogueError(f"{chapter}: no bug catalogue ({package_of(chapter)}.bugs): {err}") from None


def catalogue(spec) -> list[Bug]:
    """The chapter's bugs (``stagewise.<package>.bugs.BUGS``), checked: unique names, a docstring each, a known
    category, a target that exists, exactly one marked ``ci``. ``spec``: the chapter (its registry entry)."""
    chapter = spec.name
    module = _catalogue_module(spec)
    bugs = list(getattr(module, "BUGS", []))
    names = [b.name for b in bugs]
    if len(set(names)) != len(names):
        raise CatalogueError(f"{chapter}: bug names repeat: {names}")
    for b in bugs:
        if not b.doc or len(b.doc) < 40:
            raise CatalogueError(f"{chapter}: bug {b.name} needs a docstring saying what it is and why it is plausible")
        if b.category not in CATEGORIES:
            raise CatalogueError(f"{chapter}: bug {b.name}: category {b.category!r} is not one of {CATEGORIES}")
        module_name, _, attr = b.target.partition(":")
        if not hasattr(importlib.import_module(module_name), attr):
            raise CatalogueError(f"{chapter}: bug {b.name}: {b.target} does not exist")
    if sum(b.ci for b in bugs) != 1:
        raise CatalogueError(f"{chapter}: exactly one bug must be marked ci=True, found {sum(b.ci for b in bugs)}")
    return bugs


def apply_from_env(lookup: Callable[[str], Any]) -> str | None:
    """In a chapter's kernel: install the bug named in ``STAGEWISE_BUG`` (``chapter:name``); None without one.
    ``lookup``: chapter name -> its registry entry."""
    value = os.environ.get(BUG_ENV, "").strip()
    if not value:
        return None
    chapter, _, name = value.partition(":")
    found = {b.name: b for b in catalogue(lookup(chapter))}
    if name not in found:
        raise CatalogueError(f"{BUG_ENV}={value}: {chapter} has no bug {name!r} (bugs: {', '.join(found)})")
    found[name].install()
    return value
