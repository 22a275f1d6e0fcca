"""The chapter registry: one MyST notebook per chapter in ``book/chapters``."""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import jupytext
import nbformat

from stagewise.core.run.parameters import Parameter, parse_parameters_cell

PROJECT_ROOT = Path(__file__).resolve().parents[4]
CHAPTERS_DIR = PROJECT_ROOT / "book" / "chapters"
#: The same sources inside an installed wheel (``stagewise/_chapters``, see pyproject.toml): a notebook downloaded
#: from the book, run against a non-editable install, finds its chapter's parameters there.
PACKAGED_CHAPTERS = Path(__file__).resolve().parents[2] / "_chapters"
# Book order; a chapter file not listed here comes after these, alphabetically.
CHAPTER_ORDER = ("conservation-laws", "diagonal-incremental", "transformer-rank",
                 "relu-orthogonal", "linear-riccati", "escape-speed")


class UnknownChapterError(LookupError):
    pass


@dataclass(frozen=True)
class Chapter:
    name: str
    source: Path

    def notebook(self) -> nbformat.NotebookNode:
        """The chapter as an (unexecuted) notebook, read from its MyST Markdown."""
        nb = copy.deepcopy(_read(self.source, self.source.stat().st_mtime_ns))
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        return nb

    @cached_property
    def title(self) -> str:
        for line in self.source.read_text().splitlines():
            if line.startswith("# "):
                return line[2:].strip()
        return self.name

    @cached_property
    def front_matter(self) -> dict:
        return dict(_read(self.source, self.source.stat().st_mtime_ns).metadata.get("stagewise", {}))

    def check_parameters(self, values: dict) -> None:
        """Run the chapter's cross-parameter validator, named in its front matter as
        ``stagewise: {validator: "stagewise.module:function"}``; it raises ParameterError."""
        target = self.front_matter.get("validator")
        if target:
            import importlib
            module, function = target.split(":")
            getattr(importlib.import_module(module), function)(values)

    def expected_seconds(self, values: dict) -> float | None:
        """The chapter's expected wall time for ``values`` on the 2-core reference machine, from its cost
        model named in the front matter (``stagewise: {cost: "stagewise.module:function"}``, a function of
        the validated parameters returning seconds); ``None`` without one."""
        target = self.front_matter.get("cost")
        if not target:
            return None
        import importlib
        module, function = target.split(":")
        return float(getattr(importlib.import_module(module), function)(values))

    @cached_property
    def parameters(self) -> dict[str, Parameter]:
        return _declared(self.source, self.source.stat().st_mtime_ns)


@lru_cache(maxsize=64)
def _read(source: Path, mtime_ns: int) -> nbformat.NotebookNode:
    """A chapter's notebook, read once per version of its file (callers copy it)."""
    return jupytext.read(source)


@lru_cache(maxsize=64)
def _declared(source: Path, mtime_ns: int) -> dict[str, Parameter]:
    cells = [c for c in _read(source, mtime_ns).cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ValueError(f"{source}: expected exactly one cell tagged 'parameters'")
    return parse_parameters_cell(cells[0].source)


#: More folders of chapters (``os.pathsep``-separated); the tests add a tiny smoke-test chapter.
EXTRA_CHAPTERS_ENV = "STAGEWISE_EXTRA_CHAPTERS"


def _search_dirs() -> list[Path]:
    extra = os.environ.get(EXTRA_CHAPTERS_ENV, "")
    own = CHAPTERS_DIR if CHAPTERS_DIR.is_dir() else PACKAGED_CHAPTERS
    return [own] + [Path(p) for p in extra.split(os.pathsep) if p]


def all_chapters() -> list[Chapter]:
    found = {p.stem: Chapter(p.stem, p) for d in _search_dirs() if d.is_dir() for p in d.glob("*.md")}
    rank = {name: i for i, name in enumerate(CHAPTER_ORDER)}
    return sorted(found.values(), key=lambda c: (rank.get(c.name, len(rank)), c.name))


def get_chapter(name: str) -> Chapter:
    chapters = {c.name: c for c in all_chapters()}
    if name not in chapters:
        import difflib
        close = difflib.get_close_matches(name, list(chapters), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise UnknownChapterError(f"unknown chapter '{name}'{hint} (chapters: {', '.join(chapters)})")
    return chapters[name]
