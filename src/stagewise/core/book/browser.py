"""The built book in a real browser: Debian's Chromium driven by Playwright, never a downloaded browser.

:func:`audit` opens a page as a reader would (served over HTTP from ``_build/html``, no network) and
reports what a reader would see go wrong: raw TeX, images that did not load, console errors, failed
requests, broken internal links, a checks table with a failure, error output, code wider than its column.
:mod:`stagewise.core.book.pdf` prints them into one PDF. Both are used by ``stagewise pdf`` and by
``tests/core/test_pages.py``.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

import yaml

CHROMIUM_ENV = "STAGEWISE_CHROMIUM"
RAW_TEX = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{|\\frac|\\mathbb")
#: Markdown that reached the page as text: a table's delimiter row (hyphens, or the dashes that smart
#: punctuation makes of them) or unrendered bold, in prose and outputs (code blocks are not looked at).
RAW_MARKDOWN = re.compile(r"\|\s*:?(?:-{3,}|[\u2013\u2014]+):?\s*\||\*\*\S[^*\n]*\S\*\*")
# Sphinx loads MathJax only on pages with math; elsewhere there is nothing to wait for.
MATHJAX_READY = ("() => !document.querySelector('script[src*=\"mathjax\"]') || "
                 "(window.MathJax && MathJax.startup && MathJax.startup.promise)")
MATHJAX_DONE = "() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null"


class BrowserMissing(RuntimeError):
    """No Chromium (or no Playwright) on this machine."""


def chromium_path() -> str:
    """The system Chromium: ``$STAGEWISE_CHROMIUM``, else ``chromium`` or ``chromium-browser`` on PATH."""
    candidates = [os.environ.get(CHROMIUM_ENV), shutil.which("chromium"), shutil.which("chromium-browser")]
    found = next((c for c in candidates if c and Path(c).is_file()), None)
    if found is None:
        raise BrowserMissing("no Chromium found: install Debian's `chromium` package (apt install chromium) "
                             f"or set {CHROMIUM_ENV} to its path")
    return found


def reading_order(root: Path) -> list[str]:
    """The book's pages in reading order, from ``_toc.yml``: paths relative to ``_build/html`` (the
    top-level ``index.html`` only redirects to the first of them)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part["chapters"]]
    return [f + ".html" for f in files]


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 (a free port) for the duration; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def chromium():
    """A headless Chromium (the system one) under Playwright; :class:`BrowserMissing` if unavailable."""
    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise BrowserMissing("the Python package playwright is not installed (run `make setup`)") from None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class PageReport:
    """What a reader sees go wrong on one page (empty lists: nothing)."""
    path: str
    math_elements: int = 0
    math_expected: int = 0
    raw_tex: list[str] = field(default_factory=list)
    raw_markdown: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    broken_links: list[str] = field(default_factory=list)
    checks_rows: int = 0
    failed_checks: list[str] = field(default_factory=list)
    error_outputs: list[str] = field(default_factory=list)
    wide_code: int = 0
    wide_tables: int = 0
    broken_words: list[str] = field(default_factory=list)
    overflowing_math: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """One line per problem; empty when the page is clean."""
        out = [f"{name}: {value[:5]}" for name, value in (
            ("raw TeX", self.raw_tex), ("raw Markdown", self.raw_markdown), ("images not loaded", self.broken_images),
            ("console errors", self.console_errors), ("failed requests", self.failed_requests),
            ("broken internal links", self.broken_links), ("failed checks", self.failed_checks),
            ("error output", self.error_outputs),
            ("table cells narrower than a word (the word breaks inside)", self.broken_words),
            ("math past its box or scrolling", self.overflowing_math)) if value]
        if self.math_expected and not self.math_elements:
            out.append(f"{self.math_expected} math elements in the source, none typeset by MathJax")
        if self.wide_code:
            out.append(f"{self.wide_code} code blocks wider than the column")
        if self.wide_tables:
            out.append(f"{self.wide_tables} tables running past the page's main column")
        return out


#: A JavaScript function: the words of a table cell that the browser split over two lines (the column is narrower
#: than the word; a break at a hyphen or a slash is fair), typeset math left out. Shared by the page audit and the
#: print audit (:func:`stagewise.core.book.pdf.table_faults`).
BROKEN_WORDS_JS = """function brokenWords(cell) {
  const found = [];
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest('mjx-container')) continue;
    for (const m of node.data.matchAll(/[^\\s\\/\\u2013\\u2014-]{2,}/g)) {
      const range = document.createRange();
      range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
      const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) found.push(m[0]);
    }
  }
  return found;
}
"""

_PAGE_FACTS = """() => {
""" + BROKEN_WORDS_JS + """
  const text = document.querySelector('main') ? document.querySelector('main').innerText : document.body.innerText;
  const imgs = [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src);
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
  const rows = [...document.querySelectorAll('table.stagewise-checks tbody tr')]
      .filter(r => r.cells.length > 4).map(r => [r.cells[0].innerText, r.cells[4].innerText]);  // check, result
  const errors = [...document.querySelectorAll('.output.error, .output.traceback, .output.stderr')]
      .map(e => e.innerText.slice(0, 200));
  const wide = [...document.querySelectorAll('div.highlight pre')]
      .filter(p => p.offsetParent !== null && p.scrollWidth > p.clientWidth + 1).length;
  const column = document.querySelector('main') || document.body;
  const right = column.getBoundingClientRect().right;
  const wideTables = [...column.querySelectorAll('table')]
      .filter(t => t.offsetParent !== null && t.getBoundingClientRect().right > right + 1).length;
  const prose = [...document.querySelectorAll('main p, main li, main td')]
      .filter(e => !e.closest('div.highlight')).map(e => e.innerText).join(' \\n ');
  // a word of a table cell split over two lines: its column is narrower than the word
  const broken = [];
  for (const cell of column.querySelectorAll('table td, table th')) {
    if (cell.offsetParent !== null && broken.length < 20) broken.push(...brokenWords(cell));
  }
  // a display formula that scrolls, or a formula whose right edge passes its block's
  const overflowing = [];
  for (const m of column.querySelectorAll('mjx-container')) {
    if (m.offsetParent === null) continue;
    const tex = (m.getAttribute('aria-label') || m.textContent || '').slice(0, 60);
    const box = m.closest('p, li, td, th, dd, .admonition, .proof, section') || column;
    if (m.getAttribute('display') === 'true' && m.scrollWidth > m.clientWidth + 1) overflowing.push('scrolls: ' + tex);
    else if (m.getBoundingClientRect().right > box.getBoundingClientRect().right + 1) overflowing.push('past its box: ' + tex);
  }
  return {text, prose, imgs, links, rows, errors, wide, wideTables, broken, overflowing,
          math: document.querySelectorAll('mjx-container').length,
          expected: document.querySelectorAll('span.math, div.math').length};
}"""


def _open(page, url: str) -> None:
    """Load ``url`` and wait until MathJax (where the page loads it) has typeset every formula."""
    page.goto(url, wait_until="load")
    page.wait_for_function(MATHJAX_READY, timeout=60_000)
    page.evaluate(MATHJAX_DONE)


def audit(browser, base_url: str, html_dir: Path, path: str, screenshot: Path | None = None) -> PageReport:
    """Open ``path`` (relative to ``html_dir``) as a reader would and report what is wrong on it."""
    report = PageReport(path)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.on("console", lambda m: report.console_errors.append(f"{m.text} ({m.location.get('url', '')})")
            if m.type == "error" else None)
    page.on("requestfailed", lambda r: report.failed_requests.append(r.url))
    page.on("response", lambda r: report.failed_requests.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    _open(page, base_url + path)
    if screenshot is not None:                     # as the reader first sees it: code cells collapsed
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(screenshot), full_page=True)
    page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")  # code one click away
    facts = page.evaluate(_PAGE_FACTS)
    report.math_elements, report.math_expected = facts["math"], facts["expected"]
    report.raw_tex = [m.group(0) for m in RAW_TEX.finditer(facts["text"])]
    report.raw_markdown = [m.group(0)[:60] for m in RAW_MARKDOWN.finditer(facts["prose"])]
    report.broken_images = facts["imgs"]
    report.broken_links = _broken_links(facts["links"], base_url, html_dir)
    report.checks_rows = len(facts["rows"])
    # an empirical claim may be 'not reproduced at this budget' (with its reason); nothing may fail or be 'not run'
    report.failed_checks = [name for name, result in facts["rows"]
                            if result.strip() not in ("pass", "reproduced", "not reproduced at this budget")]
    report.error_outputs = facts["errors"] + (["Traceback"] if "Traceback (most recent call last)" in facts["text"]
                                              else [])
    report.wide_code = facts["wide"]
    report.wide_tables = facts["wideTables"]
    report.broken_words = facts["broken"]
    report.overflowing_math = facts["overflowing"]
    context.close()
    return report


@functools.lru_cache(maxsize=64)
def _ids(file: Path) -> frozenset[str]:
    return frozenset(re.findall(r'\bid="([^"]+)"', file.read_text(errors="replace")))


def _broken_links(links: list[str], base_url: str, html_dir: Path) -> list[str]:
    """Internal links whose file or anchor does not exist in the build."""
    broken = []
    for link in links:
        if not link.startswith(base_url):
            continue
        parts = urlsplit(link)
        rel = unquote(parts.path[len(urlsplit(base_url).path):]) or "index.html"
        target = html_dir / rel
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            broken.append(link)
        elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _ids(target):
            broken.append(link)
    return broken


_SLIDER_VALUE = """(name) => {
  for (const doc of (window.Bokeh ? Bokeh.documents : [])) {
    const model = doc.get_model_by_name(name);
    if (model) return model.value;
  }
  return null;
}"""


def move_slider(browser, url: str, figure_id: str) -> tuple[object, object, bool]:
    """Open ``url``, unfold the box of the slider of ``figure_id`` (stagewise.core.book.interactive), and move the
    slider to its first value with the keyboard, as a reader would: (value before, value after, whether the plot's
    pixels changed; the slider's own are not looked at)."""
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    _open(page, url)
    page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
    box = page.locator(f'.stagewise-slider[data-figure="{figure_id}"]')
    handle = box.locator(".noUi-handle").first
    handle.wait_for(timeout=30_000)
    page.wait_for_function(f"() => document.querySelector('.stagewise-slider[data-figure=\"{figure_id}\"]')"
                           ".getBoundingClientRect().height > 200", timeout=30_000)
    page.wait_for_timeout(500)                       # the first paint of the canvas
    name, plot = f"stagewise-{figure_id}-slider", box.locator("canvas").last      # the plot (the slider has none)
    before, shot = page.evaluate(_SLIDER_VALUE, name), plot.screenshot()
    handle.focus()
    page.keyboard.press("Home")
    page.wait_for_timeout(500)
    after = page.evaluate(_SLIDER_VALUE, name)
    changed = _pixels_differ(plot.screenshot(), shot)
    context.close()
    return before, after, changed


def _pixels_differ(a: bytes, b: bytes, border: int = 3) -> bool:
    """Whether two screenshots differ inside a ``border``-pixel margin (the plot's edge row can take the focus ring
    of the slider above it, at a fractional pixel offset)."""
    import io

    from PIL import Image, ImageChops
    first, second = (Image.open(io.BytesIO(x)).convert("RGB") for x in (a, b))
    if first.size != second.size:
        return True
    w, h = first.size
    return ImageChops.difference(first, second).crop((border, border, w - border, h - border)).getbbox() is not None


_THUMBNAILS = """() => [...document.querySelectorAll('img')].filter(i => i.offsetParent !== null).map(i => {
  const s = getComputedStyle(i);
  const w = i.clientWidth - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight);
  const h = i.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom);
  const scale = s.objectFit === 'contain' ? Math.min(w / i.naturalWidth, h / i.naturalHeight) : w / i.naturalWidth;
  return [i.getAttribute('src'), i.naturalWidth * scale, i.naturalHeight * scale];
})"""


def drawn_image_sizes(browser, url: str, width: int = 1366) -> list[tuple[str, float, float]]:
    """(src, drawn width, drawn height) in CSS pixels of every visible image of ``url`` at a ``width``-pixel window
    (the picture itself, inside any letterbox of ``object-fit: contain``)."""
    context = browser.new_context(viewport={"width": width, "height": 768})
    page = context.new_page()
    _open(page, url)
    page.wait_for_function("() => [...document.images].every(i => i.complete)", timeout=30_000)
    sizes = [tuple(x) for x in page.evaluate(_THUMBNAILS)]
    context.close()
    return sizes
