"""The labels of a chapter's statement boxes and section targets, read from its source (rows name them)."""
from __future__ import annotations

import functools
from pathlib import Path

from stagewise.core.run.registry import get_chapter


def statement_labels(chapter: str) -> dict[str, str] | None:
    """The labels a row may name in a registered chapter, each with how the table shows it: a sphinx-proof
    box (``:::{prf:theorem} Title`` and ``:label: thm-x``: "Theorem: Title") or a target ``(sec-x)=`` before
    a heading (the heading). None for a chapter that is not registered."""
    from stagewise.core.run.registry import UnknownChapterError
    try:
        source = get_chapter(chapter).source
    except UnknownChapterError:
        return None
    return _labels_of(str(source), source.stat().st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _labels_of(path: str, mtime_ns: int) -> dict[str, str]:
    import re
    text = Path(path).read_text()
    labels, box, target = {}, None, None
    for line in text.splitlines():
        opened = re.match(r"^:{3,}\{prf:(\w+)\}\s*(.*)$", line) or re.match(r"^`{3,}\{prf:(\w+)\}\s*(.*)$", line)
        if opened:
            title = re.sub(r"\$([^$]*)\$", lambda m: m.group(1).replace("\\", ""), opened.group(2).strip())
            box = opened.group(1).capitalize() + (f": {title}" if title else "")
            continue
        found = re.match(r"^:label:\s*(\S+)", line)
        if found and box:
            labels[found.group(1)] = box
            box = None
            continue
        found = re.match(r"^\(([\w-]+)\)=\s*$", line)
        if found:
            target = found.group(1)
            continue
        if target and line.startswith("#"):
            labels[target] = line.lstrip("#").strip()
            target = None
        elif target and line.strip():
            labels[target] = target
            target = None
    return labels
