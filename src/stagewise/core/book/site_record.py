"""The record of what the HTML was made from, written after each complete build (``_build/html/.stagewise-site.json``).

It holds a hash of every file the pages are made from (:func:`site_inputs`). ``stagewise book`` reads it to skip a
build when nothing changed (:func:`html_is_current`) and, when only static files changed (an edited ``book.css``),
to copy them in place of a whole Sphinx build (:func:`refresh_static`): Sphinx would copy them and change each
page's cache-busting ``?v=<crc32>`` of them, and nothing else.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
import zlib
from pathlib import Path

from stagewise.core.book.paths import BUILD_DIR, EXECUTED_DIR, STATIC_DIR
from stagewise.core.run.registry import PROJECT_ROOT, all_chapters
from stagewise.core.run.rundir import write_text_atomic

SITE_STAMP = BUILD_DIR / "html" / ".stagewise-site.json"
#: The code that writes the pages (besides Sphinx and the theme, pinned in requirements.lock).
_SITE_CODE = ("sphinx", "core/book/build.py", "core/book/figure_pages.py", "core/book/power_page.py",
              "core/figures/styles.py", "core/book/verification_page.py", "core/run/pages.py", "core/sweep/atlas.py",
              "core/book/paper_scale_page.py", "core/sweep/paper_scale.py", "core/book/interactive.py",
              "core/book/typeset.py", "core/book/site_record.py", "core/book/mutants_page.py", "core/sweep/mutants.py",
              "core/styles", "core/figures/restyle.py", "core/figures/sidecar.py", "core/figures/export.py")


def site_inputs() -> list[Path]:
    """Every file the HTML is made from: configuration, table of contents, the book's own pages, static files and
    bibliographies, the stored mutation matrices, each executed chapter (notebook, results, figures' sidecars and
    data), the page-writing code and the lock file."""
    root = PROJECT_ROOT
    files = [root / "_config.yml", root / "_toc.yml", root / "requirements.lock"]
    files += sorted((root / "tests" / "atlas").glob("*.yaml"))     # the verification pages list atlas and exercises
    files += [p for p in (root / "book").rglob("*") if p.is_file() and "executed" not in p.parts
              and "chapters" != p.parent.name and p.suffix != ".pyc"]
    for chapter in all_chapters():
        folder = EXECUTED_DIR / chapter.name
        files += [folder / f"{chapter.name}.ipynb", folder / "results.json"]
        files += sorted((folder / "figures").glob("*.json")) + sorted((folder / "figures").glob("*.npz"))
    package = root / "src" / "stagewise"
    for part in _SITE_CODE:
        path = package / part
        files += sorted(f for f in path.rglob("*") if f.is_file() and f.suffix != ".pyc") if path.is_dir() else [path]
    return sorted(set(files))


def _name(path: Path) -> str:
    return str(path.relative_to(PROJECT_ROOT) if path.is_relative_to(PROJECT_ROOT) else path)


def input_hashes() -> dict[str, str]:
    """{input's path relative to the project: sha256 of its bytes, or "<missing>"}."""
    return {_name(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "<missing>"
            for p in site_inputs()}


def site_fingerprint(hashes: dict[str, str] | None = None) -> str:
    digest = hashlib.sha256()
    for name, sha in sorted((input_hashes() if hashes is None else hashes).items()):
        digest.update(f"{name}\0{sha}\n".encode())
    return digest.hexdigest()


def write() -> None:
    """Record the inputs of the build that has just completed."""
    hashes = input_hashes()
    write_text_atomic(SITE_STAMP, json.dumps({"site_fingerprint": site_fingerprint(hashes), "inputs": hashes}))


def changed_inputs() -> list[str] | None:
    """The inputs that differ from the last complete build's (added, removed or edited), or None when there is no
    complete build on record."""
    try:
        recorded = json.loads(SITE_STAMP.read_text())["inputs"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError):
        return None
    if not (BUILD_DIR / "html" / "index.html").is_file():
        return None
    now = input_hashes()
    return sorted(name for name in set(now) | set(recorded) if now.get(name) != recorded.get(name))


def html_is_current() -> bool:
    """True when the last HTML build completed and nothing it was made from has changed since."""
    return changed_inputs() == []


def _crc(path: Path) -> str:
    """Sphinx's cache-busting checksum of a static file (``sphinx.builders.html._assets._file_checksum``)."""
    content = path.read_bytes().translate(None, b"\r")
    return f"{zlib.crc32(content):08x}"


def refresh_static() -> list[str]:
    """When the only inputs changed since the last build are existing files of ``book/_static``, do what a Sphinx
    build would do with them: copy each into ``_build/html/_static`` and give each page's link to it the file's new
    checksum; record the build and return the files copied. Otherwise change nothing and return []."""
    changed = changed_inputs()
    static = _name(STATIC_DIR) + "/"
    if not changed or not all(c.startswith(static) and (PROJECT_ROOT / c).is_file() for c in changed):
        return []
    out = BUILD_DIR / "html" / "_static"
    links = {}
    for name in changed:
        relative = Path(name).relative_to(_name(STATIC_DIR))
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PROJECT_ROOT / name, out / relative)
        links[relative.as_posix()] = _crc(out / relative)
    pattern = re.compile(r"(_static/(" + "|".join(map(re.escape, links)) + r"))\?v=[0-9a-f]{8}")
    for page in (BUILD_DIR / "html").rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = pattern.sub(lambda m: f"{m.group(1)}?v={links[m.group(2)]}", text)
        if new != text:
            write_text_atomic(page, new)
    write()
    return changed
