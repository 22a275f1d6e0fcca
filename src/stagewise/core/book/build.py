"""Build the book from the run command's own executions.

Each chapter is executed by :func:`stagewise.core.run.runner.execute` into
``book/executed/<chapter>/`` (the same run folder a user gets), and Sphinx renders
those executed notebooks without executing them again (``execute_notebooks: off``).
A chapter is re-executed when what it is made from (:func:`book_inputs`: its source, the code it runs, the pinned
requirements, the style sheets) differs from what its last execution by the book was made from.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from stagewise.core.run import faults
from stagewise.core.run import leftovers
from stagewise.core.run import locks
from stagewise.core.run import rundir
from stagewise.core.run.registry import PROJECT_ROOT, Chapter, all_chapters
from stagewise.core.run.provenance import chapter_code_fingerprint, drawing_files
from stagewise.core.book.paths import BUILD_DIR, EXECUTED_DIR, SITE_DIR, VERIFICATION_DIR
from stagewise.core.book import site_record

#: Tests point the book's executions elsewhere with this variable.
EXECUTED_DIR_ENV = "STAGEWISE_EXECUTED_DIR"


def executed_dir() -> Path:
    return Path(os.environ.get(EXECUTED_DIR_ENV) or EXECUTED_DIR)


class BuildLock(locks.FolderLock):
    """One book build at a time: a lock on ``book/executed/.build.lock``."""

    def __init__(self):
        folder = executed_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise rundir.OutputRefused(f"cannot create {folder}: {err.strerror}") from None
        super().__init__(folder, what="the book build in", path=folder / ".build.lock")


def report_leftovers() -> list[str]:
    """Mark and report killed chapter executions under the executed folder (build lock held)."""
    lines = []
    for staging in leftovers.find_leftovers([executed_dir()]):
        target = leftovers.target_of(staging)
        try:
            with locks.FolderLock(target):
                if leftovers.mark_killed(staging):
                    lines.append(f"found {staging}, left by an execution that was killed; marked it FAILED "
                                 "('stagewise clean --partial' removes it)")
                else:
                    lines.append(f"{staging} is a killed execution's leftover ('stagewise clean --partial' "
                                 "removes it)")
                lines += leftovers.recover(target)
        except rundir.FolderBusy:
            continue
    return lines


@dataclass
class Plan:
    chapter: Chapter
    reason: str | None  # None: up to date

    @property
    def folder(self) -> Path:
        return executed_dir() / self.chapter.name


def staleness(chapter: Chapter, executed: Path | None = None, root: Path = PROJECT_ROOT) -> str | None:
    """Why ``chapter`` must be executed again, or None when its outputs are current."""
    results_path = (executed or executed_dir()) / chapter.name / "results.json"
    if not results_path.exists():
        return "never executed"
    try:
        results = json.loads(results_path.read_text())
    except (OSError, ValueError):
        return "results.json unreadable"
    if not isinstance(results, dict) or results.get("status") != "complete":
        return "last execution did not complete"
    try:
        stamp = json.loads(inputs_stamp(chapter.name, executed).read_text())
    except (OSError, ValueError):
        return "not executed by a book build (no record of its inputs)"
    if not isinstance(stamp, dict) or stamp.get("results") != _sha(results_path):
        return "executed outside the book build since"
    if stamp.get("book_inputs") != book_inputs(chapter, root):
        return "code changed (chapter, the code it runs, or requirements)"
    return None


def inputs_stamp(chapter: str, executed: Path | None = None) -> Path:
    """Where the book build records what a chapter's last successful execution was made from (:func:`book_inputs`)
    and which results it wrote: beside the run folders, never inside one (a run's folder holds only its own files)."""
    return (executed or executed_dir()) / ".book-inputs" / f"{chapter}.json"


def _sha(path: Path) -> str:
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest()


def book_inputs(chapter: Chapter, root: Path = PROJECT_ROOT) -> str:
    """The fingerprint of what a chapter's execution is made from: its whole source (prose, front matter, code),
    the code it runs (:func:`~stagewise.core.run.provenance.chapter_code_fingerprint`: its subpackage, the kernel's
    ``core/`` and ``numerics/``, the requirements and the lock), the code that draws its figures
    (:func:`~stagewise.core.run.provenance.drawing_files`) and the package's data files (the figure style
    sheets). The command line, the book build, the sweeps and the restyling are not in it: a change there does not
    change what a chapter shows, so it re-executes nothing (the site's own fingerprint rebuilds the pages)."""
    import hashlib
    digest = hashlib.sha256(chapter_code_fingerprint(chapter.name, chapter.source, root).encode())
    digest.update(chapter.source.read_bytes())
    for path in drawing_files(chapter.name, root):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    package = root / "src" / "stagewise"
    for path in sorted(package.rglob("*")):
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(package)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def plan(chapters: list[Chapter] | None = None, force: bool | list[str] = False) -> list[Plan]:
    """Each chapter and why it must execute (``None``: up to date); ``force``: every chapter, or those named."""
    def forced(c: Chapter) -> bool:
        return force is True or (isinstance(force, list) and c.name in force)
    return [Plan(c, "forced" if forced(c) else staleness(c)) for c in (chapters or all_chapters())]


def failed_checks(chapter: Chapter) -> list[str]:
    """The chapter's failed rows, and its published findings that the book's execution (at the default
    parameters) no longer shows: the book cannot change a conclusion silently."""
    results = json.loads((executed_dir() / chapter.name / "results.json").read_text())
    from stagewise.core.checks.rows import failed, rows_of
    from stagewise.core.run import findings as published
    found = published.compare(chapter, results.get("parameters", {}), results.get("claims", []))
    changed = [f"{f['name']} (published {f['published']!r}, measured {f['measured']!r})"
               for f in found["changed"]] if found["at_defaults"] else []
    return failed(rows_of(results)) + changed


def render_html(strict: bool = True) -> float:
    """Sphinx build of the whole book into ``_build/html``; returns seconds."""
    started = time.time()
    faults.point("before-html")
    from stagewise.core.book import power_page
    stage_site()
    power_page.write(SITE_DIR)       # the appendix "What the checks can catch", from book/power/ (cheap)
    write_gallery(SITE_DIR)          # the figure gallery, from the executed chapters' sidecars (cheap)
    command = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(PROJECT_ROOT),
               "--builder", "html", "--keep-going", "--all"]  # --all: Sphinx skips copying the CSS and static
    # files when no page is out of date, so an edited book.css never reached the pages (about 10 s either way)
    if strict:
        command += ["-W", "-n"]
    subprocess.run(command, check=True, cwd=PROJECT_ROOT)
    publish_figures()
    write_redirects()
    site_record.write()
    return time.time() - started


def update_html(force: bool = False) -> str:
    """Build the pages unless nothing they are made from changed since the last build; when only static files
    changed, copy them in (:func:`site_record.refresh_static`, seconds) instead of a whole build (minutes). A forced
    update always builds. Returns what was done, in a line."""
    index = BUILD_DIR / "html" / "index.html"
    if not force and site_record.html_is_current():
        return f"html up to date: nothing it is made from changed since the last build ({index})"
    copied = [] if force else site_record.refresh_static()
    if copied:
        return f"html updated: only static files changed ({', '.join(copied)}), copied into the pages ({index})"
    return f"html built in {render_html():.0f} s: {index}"


def stage_site() -> list[str]:
    """Cut each executed chapter into its story page ``chapters/<chapter>.ipynb`` and its verification page
    ``verification/<chapter>.ipynb`` (:mod:`stagewise.core.book.verification_page`), writing a page only when it
    changed, so that an unchanged chapter keeps its modification time; returns the pages written."""
    from stagewise.core.book import verification_page
    from stagewise.core.run import session
    from stagewise.core.run.rundir import write_text_atomic
    SITE_DIR.mkdir(exist_ok=True)
    VERIFICATION_DIR.mkdir(exist_ok=True)
    copied = []
    for chapter in all_chapters():
        folder = EXECUTED_DIR / chapter.name
        if not (folder / f"{chapter.name}.ipynb").is_file() or not (folder / "results.json").is_file():
            continue
        story, verification = verification_page.chapter_pages(chapter, folder,
                                                              session.statement_labels(chapter.name) or {})
        for target, page in ((SITE_DIR / f"{chapter.name}.ipynb", story),
                             (VERIFICATION_DIR / f"{chapter.name}.ipynb", verification)):
            text = json.dumps(page, indent=1, ensure_ascii=False) + "\n"
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                write_text_atomic(target, text)
                copied.append(str(target.relative_to(PROJECT_ROOT)))
    return copied


def write_redirects() -> int:
    """Pages at the chapters' former addresses (``book/executed/<c>/<c>.html``) that send the reader, with the
    anchor of the link they followed, to ``chapters/<c>.html``."""
    html_dir = BUILD_DIR / "html"
    count = 0
    for chapter in all_chapters():
        old = html_dir / "book" / "executed" / chapter.name / f"{chapter.name}.html"
        new = f"../../../chapters/{chapter.name}.html"
        old.parent.mkdir(parents=True, exist_ok=True)
        old.write_text(
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Moved</title>\n"
            f'<link rel="canonical" href="{new}">\n<meta http-equiv="refresh" content="0; url={new}">\n'
            f"<script>location.replace({new!r} + location.hash)</script></head>\n"
            f'<body><p>This chapter is now at <a href="{new}">chapters/{chapter.name}.html</a>.</p></body></html>\n')
        count += 1
    return count


GALLERY_NAME = "figure-gallery"


def write_gallery(folder: Path) -> Path:
    """The figure gallery page (``chapters/figure-gallery.md``), every chapter's figures as thumbnails."""
    from stagewise.core.book import figure_pages
    from stagewise.core.run.rundir import write_text_atomic
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{GALLERY_NAME}.md"
    chapters = [(c.name, c.title) for c in all_chapters()]
    prefix = os.path.relpath(EXECUTED_DIR, folder).replace(os.sep, "/")
    write_text_atomic(path, figure_pages.gallery_page(EXECUTED_DIR, chapters, image_prefix=prefix))
    return path


def site_url() -> str:
    """Where the book is published (``html.baseurl`` of ``_config.yml``): the base of each figure's citation URL."""
    import yaml
    config = yaml.safe_load((PROJECT_ROOT / "_config.yml").read_text()) or {}
    return str((config.get("html") or {}).get("baseurl") or "").rstrip("/")


def publish_figures() -> int:
    """Downloads, talk renderings, data, the dark pair and the menu under every figure of the built pages."""
    from stagewise import __version__
    from stagewise.core.book import figure_pages
    html_dir = BUILD_DIR / "html"
    pages = {c.name: [html_dir / "chapters" / f"{c.name}.html", html_dir / "verification" / f"{c.name}.html"]
             for c in all_chapters()}
    return figure_pages.publish(html_dir, EXECUTED_DIR, pages, site_url(), __version__,
                                gallery=html_dir / "chapters" / f"{GALLERY_NAME}.html")


def clean() -> None:
    """Remove the HTML build, the staged pages and every chapter execution (``--clean``; build lock held)."""
    shutil.rmtree(BUILD_DIR, ignore_errors=True)
    shutil.rmtree(SITE_DIR, ignore_errors=True)
    shutil.rmtree(VERIFICATION_DIR, ignore_errors=True)
    folder = executed_dir()
    if folder.is_dir():
        for entry in folder.iterdir():
            if entry.name != ".build.lock":
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()


@dataclass
class Execution:
    chapter: str
    code: int          # the run command's exit status (0 ok, 1 failed, 2 refused, 130 interrupted, <0 killed)
    seconds: float
    message: str       # its last line on stderr


def default_jobs() -> int:
    """Chapters executed at once by ``stagewise book``: one per core (each runs one torch thread)."""
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def expected_seconds(item: Plan) -> float:
    """How long ``item``'s execution should take: its last run's wall time when the executed folder
    has one (this machine's number), else ``expected_seconds`` in the chapter's front matter (the
    default run measured on a 2-core CPU with two chapters at once), else 0."""
    try:
        results = json.loads((item.folder / "results.json").read_text())
        return float(results["provenance"]["wall_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return float(item.chapter.front_matter.get("expected_seconds", 0))


def longest_first(plans: list[Plan]) -> list[Plan]:
    """The stale chapters, longest expected execution first (LPT scheduling: on 2 cores the cold build
    of the six chapters ends at about max(longest, total / 2) instead of whenever the last long
    chapter in table-of-contents order happens to start)."""
    return sorted((p for p in plans if p.reason is not None), key=expected_seconds, reverse=True)


def execute_parallel(plans: list[Plan], jobs: int, say=print) -> list[Execution]:
    """Execute the stale chapters of ``plans``, up to ``jobs`` at once, each in its own process.

    Each is a ``stagewise run CHAPTER --out book/executed/CHAPTER`` of its own (the runner sets
    environment variables and papermill changes directory, so threads would be unsafe), with
    the run command's own safety: lock, staging folder, swap. Longest first (:func:`longest_first`).
    ``say`` gets a line when a chapter starts and when it ends.
    """
    import tempfile

    from stagewise.core.run.rundir import write_text_atomic
    queue = longest_first(plans)
    inputs: dict[str, tuple[Path, str]] = {}
    running: dict[str, tuple[subprocess.Popen, float, object]] = {}
    done: list[Execution] = []
    env = dict(os.environ, STAGEWISE_TORCH_THREADS=os.environ.get("STAGEWISE_TORCH_THREADS", "1"))
    try:
        while queue or running:
            while queue and len(running) < jobs:
                item = queue.pop(0)
                inputs[item.chapter.name] = (item.folder, book_inputs(item.chapter))   # as the execution starts
                log = tempfile.TemporaryFile(mode="w+")
                command = [sys.executable, "-m", "stagewise.core.cli.main", "run", item.chapter.name,
                           "--out", str(item.folder), "--quiet"]
                running[item.chapter.name] = (subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log,
                                                               env=env, cwd=PROJECT_ROOT), time.time(), log)
                guess = expected_seconds(item)
                say(f"{item.chapter.name:24s} running" + (f" (about {guess:.0f} s)" if guess else ""))
            for name, (proc, started, log) in list(running.items()):
                if proc.poll() is None:
                    continue
                del running[name]
                log.seek(0)
                lines = [line for line in log.read().splitlines() if line.strip()]
                log.close()
                for line in lines[:-1] if proc.returncode else lines:
                    if "took over" in line or "FAILED" in line or "restored" in line or "removed" in line:
                        say(line)
                seconds = time.time() - started
                message = lines[-1] if lines else ""
                done.append(Execution(name, proc.returncode, seconds, message))
                if proc.returncode == 0:
                    folder, fingerprint = inputs[name]
                    stamp = inputs_stamp(name, folder.parent)
                    stamp.parent.mkdir(exist_ok=True)
                    write_text_atomic(stamp, json.dumps({"book_inputs": fingerprint,
                                                         "results": _sha(folder / "results.json")}))
                verdict = f"done in {seconds:.0f} s" if proc.returncode == 0 else \
                    f"failed (exit {proc.returncode}) after {seconds:.0f} s: {message}"
                say(f"{name:24s} {verdict}")
            if running:
                time.sleep(0.2)
    except BaseException:
        for proc, _, _ in running.values():  # an interrupted build stops its chapters (they keep partial runs)
            proc.terminate()
        for proc, _, _ in running.values():
            proc.wait()
        raise
    return done
