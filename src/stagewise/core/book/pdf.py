"""``stagewise pdf``: the built book as one PDF that reads like a book, offline.

The pages of ``_build/html`` (reading order of ``_toc.yml``) are joined into one HTML document: each page's
article, with its ids made unique (``<page>--<id>``) and every link between pages turned into a link inside the
document, so that cross-references, figure references and citations jump inside the PDF. In front of it: a title
page (title, version, commit, build date) and a table of contents. Chromium prints it twice: in the first print
the named destination of every chapter and section (each is linked from the table of contents) gives its page,
which the second print writes into the table of contents (the numbers have a fixed width, so nothing moves); the
same pages make the PDF's outline (bookmarks: chapters, and their sections below them). A third print, of an
empty page per page of the book, carries the running chapter title at the top and the page number at the foot;
it is laid over the book with pypdf, which also writes the document's metadata (title, author, subject, keywords,
creation date). The print is measured as it comes out (:func:`table_faults`, :func:`heading_faults`): the summary
names every table column narrower than a word, table row taller than a quarter of a page, table past the column,
and heading split over two pages or left at a page's foot.
"""
from __future__ import annotations

import datetime as _dt
import html as _html
import io
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

PRINT_NAME = ".stagewise-print.html"
MARGIN = {"top": "20mm", "bottom": "20mm", "left": "16mm", "right": "16mm"}
PLACEHOLDER = "000"   # a page number's width in the first print


@dataclass
class Entry:
    level: int            # 1 = a page (chapter), 2 = a section
    title: str
    anchor: str
    page: int | None = None


def _key(path: str) -> str:
    return "p-" + re.sub(r"[^a-z0-9]+", "-", path.lower().removesuffix(".html")).strip("-")


def _book_meta(root: Path) -> dict[str, str]:
    import yaml
    from stagewise import __version__
    config = yaml.safe_load((root / "_config.yml").read_text()) or {}
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                    capture_output=True, text=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", False
    return {"title": str(config.get("title", "Learning in Stages")), "author": str(config.get("author", "")),
            "version": __version__, "commit": commit + (" (with uncommitted changes)" if dirty else ""),
            "date": _dt.date.today().isoformat(),
            "url": str((config.get("html") or {}).get("baseurl", ""))}


def join_pages(html_dir: Path, pages: list[str], meta: dict[str, str]) -> tuple[str, list[Entry]]:
    """The one document (HTML text) and its table of contents (without page numbers)."""
    from bs4 import BeautifulSoup
    known = {p: _key(p) for p in pages}
    head_soup = BeautifulSoup((html_dir / pages[min(1, len(pages) - 1)]).read_text(encoding="utf-8"), "html.parser")
    first_url = "http://book/" + pages[min(1, len(pages) - 1)]
    for tag in head_soup.head.find_all(["link", "script"]):
        for attr in ("href", "src"):
            if tag.get(attr) and not re.match(r"^[a-z]+:|^//", tag[attr]):
                tag[attr] = urlsplit(urljoin(first_url, tag[attr])).path.lstrip("/")
    entries: list[Entry] = []
    bodies = []
    for path in pages:
        key = known[path]
        url = "http://book/" + path
        soup = BeautifulSoup((html_dir / path).read_text(encoding="utf-8"), "html.parser")
        article = soup.find("article", class_="bd-article") or soup.body
        for tag in article.find_all(class_=["stagewise-figure-menu", "headerlink", "toggle-details__summary"]):
            if "stagewise-figure-menu" in (tag.get("class") or []) or "headerlink" in (tag.get("class") or []):
                tag.decompose()
        for tag in article.find_all(id=True):
            tag["id"] = f"{key}--{tag['id']}"
        for tag in article.find_all(["a", "img", "source"]):
            for attr in ("href", "src"):
                value = tag.get(attr)
                if not value or re.match(r"^[a-z]+:|^//", value):
                    continue
                if value.startswith("#"):
                    tag[attr] = f"#{key}--{unquote(value[1:])}"
                    continue
                target = urlsplit(urljoin(url, value))
                relative = target.path.lstrip("/")
                if relative in known:
                    tag[attr] = f"#{known[relative]}--{unquote(target.fragment)}" if target.fragment else f"#{known[relative]}"
                else:
                    tag[attr] = relative + (f"#{target.fragment}" if target.fragment else "")
        for img in article.find_all("img", class_="only-dark"):     # the dark rendering is for screens
            img.decompose()
        heading = article.find("h1")
        title = heading.get_text(" ", strip=True).rstrip("#").strip() if heading else path
        entries.append(Entry(1, title, key))
        for h2 in article.find_all("h2"):
            section = h2.find_parent("section")
            if section is None or not section.get("id"):
                continue
            if not _prints_something(section):     # a heading over code cells only: nothing under it on paper
                section.decompose()
                continue
            h2["id"] = section["id"] + "-heading"       # the contents point at the heading, not the section's top
            entries.append(Entry(2, h2.get_text(" ", strip=True).rstrip("#").strip(), h2["id"]))
        bodies.append(f'<section class="stagewise-print-page" id="{key}">{article.decode_contents()}</section>')
    head = head_soup.head.decode_contents()
    body = (_title_page(meta) + '<nav class="stagewise-print-toc" id="contents"><h1>Contents</h1>'
            + "".join(_toc_line(e) for e in entries) + "</nav>" + "".join(bodies))
    return (f"<!DOCTYPE html><html lang=\"en\" data-theme=\"light\"><head>{head}<style>{PRINT_CSS}</style></head>"
            f'<body><main class="bd-main"><div class="bd-content"><div class="bd-article-container">'
            f'<article class="bd-article">{body}</article></div></div></main></body></html>'), entries


def _prints_something(section) -> bool:
    """Whether ``section`` shows anything in print besides its heading (code cells' sources are not printed)."""
    import copy
    clone = copy.copy(section)
    for tag in clone.find_all(["h2"], limit=1) + clone.find_all(class_=["cell_input", "above-input"]):
        tag.decompose()
    return bool(clone.get_text(strip=True)) or clone.find(["img", "table", "mjx-container"]) is not None


def _title_page(meta: dict[str, str]) -> str:
    e = _html.escape
    return (f'<div class="stagewise-print-title"><div class="t">{e(meta["title"])}</div>'
            '<div class="s">An executable book on how neural networks trained from small initialization learn in '
            'stages</div>'
            f'<div class="a">{e(meta["author"])}</div>'
            f'<div class="v">Version {e(meta["version"])} · commit {e(meta["commit"])} · built {e(meta["date"])}</div>'
            + (f'<div class="u">{e(meta["url"])}</div>' if meta.get("url") else "") + "</div>")


def _toc_line(entry: Entry) -> str:
    number = PLACEHOLDER if entry.page is None else str(entry.page)
    return (f'<a class="toc-{entry.level}" href="#{entry.anchor}"><span class="toc-title">'
            f'{_html.escape(entry.title)}</span><span class="toc-page">{number}</span></a>')


PRINT_CSS = """
@page { size: A4; }
html, body { background: #fff !important; }
.bd-main .bd-content .bd-article-container { max-width: none; padding: 0; }
.stagewise-print-title { page-break-after: always; text-align: center; padding-top: 70mm; }
.stagewise-print-title .t { font-size: 34pt; font-weight: 600; }
.stagewise-print-title .s { font-size: 13pt; margin: 8mm 20mm; color: #444; }
.stagewise-print-title .a { font-size: 13pt; margin-top: 25mm; }
.stagewise-print-title .v, .stagewise-print-title .u { font-size: 10pt; margin-top: 4mm; color: #555; }
.stagewise-print-toc { page-break-after: always; }
.stagewise-print-toc a { display: flex; text-decoration: none; color: #000; margin: 1.2mm 0; }
.stagewise-print-toc a.toc-1 { font-weight: 600; margin-top: 4mm; }
.stagewise-print-toc a.toc-2 { padding-left: 8mm; font-size: 0.92em; }
.stagewise-print-toc .toc-title { flex: 1; border-bottom: 1px dotted #999; margin-right: 2mm; }
.stagewise-print-toc .toc-page { width: 3em; text-align: right; font-variant-numeric: tabular-nums; }
.stagewise-print-page { page-break-before: always; }
.stagewise-figure-menu, .only-dark, .stagewise-figure-pair img.only-dark { display: none !important; }
img.only-light { display: inline !important; }
details.above-input, details.below-input, .cell_input { display: none; }
pre, table, div.cell_input, div.highlight, figure { page-break-inside: avoid; }
h1, h2, h3, h4 { break-after: avoid; page-break-after: avoid; break-inside: avoid; }
/* the theme hides a page's first heading in print (its print header shows the title): a chapter opens with it */
.stagewise-print-page h1 { display: block !important; margin: 0 0 5mm; }
/* the mutation catalogues in print: one block per bug (its line of facts, then what it is), not seven columns
   crushed into the width of a page; the matrices in a compact type */
table.stagewise-power { font-size: 0.78em; }
table.stagewise-matrix { font-size: 0.7em; }   /* conservation-laws: 24 check columns across the page */
table.stagewise-matrix :is(td, th) { padding: 0.1em 0.12em; }
table.stagewise-power:not(.stagewise-matrix), table.stagewise-power:not(.stagewise-matrix) tbody { display: block; }
table.stagewise-power:not(.stagewise-matrix) thead { display: none; }
table.stagewise-power:not(.stagewise-matrix) tr { display: block; break-inside: avoid; padding: 1.2mm 0;
  border-bottom: 0.3pt solid #bbb; }
table.stagewise-power:not(.stagewise-matrix) td { display: inline; border: 0; padding: 0 0.5em 0 0; }
table.stagewise-power:not(.stagewise-matrix) td:first-child { font-weight: 600; }
table.stagewise-power:not(.stagewise-matrix) td:nth-child(4) { display: block; width: auto; padding: 0.5mm 0; }
table.stagewise-power:not(.stagewise-matrix) td:nth-child(5)::before { content: "replaces "; }
.bd-article table.table { font-size: 0.85em; }
"""

#: The printed column's width in CSS px (A4 less the margins), and the height a table row may take at most: a
#: quarter of a page, so that a page holds a few rows at least.
COLUMN_PX = round((210 - 32) / 25.4 * 96)
ROW_MAX_PX = round((297 - 40) / 25.4 * 96 / 4)


def _table_facts() -> str:
    """The print audit's script: faults of every table as laid out on the printed column."""
    from stagewise.core.book.browser import BROKEN_WORDS_JS
    return "() => {\n" + BROKEN_WORDS_JS + """
  const faults = [];
  for (const table of document.querySelectorAll('table')) {
    if (table.offsetParent === null) continue;
    const where = (table.closest('section.stagewise-print-page') || {}).id || 'the document';
    const tallest = Math.max(0, ...[...table.rows].map(r => r.getBoundingClientRect().height));
    if (tallest > """ + str(ROW_MAX_PX) + """) faults.push(`a row ${Math.round(tallest)} px tall (a page holds fewer than 4) in a table of ${where}`);
    const column = (table.closest('article') || document.body).getBoundingClientRect().right;
    if (table.getBoundingClientRect().right > column + 2) faults.push(`a table past the printed column in ${where}`);
    for (const cell of table.querySelectorAll('td, th'))
      for (const word of brokenWords(cell)) faults.push(`a column narrower than the word "${word}" in a table of ${where}`);
  }
  return faults;
}"""


def table_faults(browser, url: str) -> list[str]:
    """Tables of the print document at ``url`` as they print: laid out at the printed column's width with the print
    styles. A fault: a column narrower than one of its words (the word breaks inside), a row taller than a quarter
    of a page, a table past the column."""
    from stagewise.core.book.browser import _open
    context = browser.new_context(viewport={"width": COLUMN_PX, "height": 1000})
    page = context.new_page()
    page.emulate_media(media="print")
    _open(page, url)
    faults = page.evaluate(_table_facts())
    context.close()
    return faults


def heading_faults(reader, entries: list[Entry]) -> list[str]:
    """Sections whose heading is not whole on its page, or ends its page (printed without what follows)."""
    import unicodedata
    faults = []
    for entry in entries:
        if entry.level != 2 or not entry.page:
            continue
        text = unicodedata.normalize("NFKC", reader.pages[entry.page - 1].extract_text() or "")
        flat = re.sub(r"(\w)- (\w)", r"\1-\2", " ".join(text.split()))       # a hyphen the extraction split
        pieces = [" ".join(p.split()) for p in re.split(r"\\\(.*?\\\)", unicodedata.normalize("NFKC", entry.title))]
        at = 0                                      # the heading's words in order, its math left out
        for piece in filter(None, pieces):
            at = flat.find(piece, at) if at >= 0 else -1
            at = at + len(piece) if at >= 0 else -1
        if at < 0:
            faults.append(f"heading split over two pages: {entry.title!r} (page {entry.page})")
        elif len(flat[at:].strip()) < 80:
            faults.append(f"heading at the foot of page {entry.page}, apart from its section: {entry.title!r}")
    return faults


def _outline_pages(pdf: bytes, entries: list[Entry]) -> None:
    """The page (1-based) of each entry, from the printed document's named destinations (Chromium writes one
    per id that a link points to; the table of contents links every entry)."""
    from pypdf import PdfReader
    reader = PdfReader(io.BytesIO(pdf))
    dests = {}
    for name, dest in reader.named_destinations.items():
        try:
            dests[str(name).lstrip("/")] = reader.get_destination_page_number(dest) + 1
        except Exception:  # noqa: BLE001 - a destination pypdf cannot resolve is simply not used
            continue
    for entry in entries:
        entry.page = dests.get(entry.anchor)


def _print(browser, url: str, **options) -> bytes:
    from stagewise.core.book.browser import _open
    page = browser.new_page()
    _open(page, url)                    # loaded, and MathJax has typeset every formula
    # code cells stay folded; the dropdowns of the text (stored runs, derivations) print open
    page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = d.matches('.sd-dropdown'))")
    blob = page.pdf(format="A4", print_background=True, tagged=True, margin=MARGIN, **options)
    page.close()
    return blob


def _overlay(browser, running: list[str], numbers: list[str]) -> bytes:
    """One A4 page per book page, empty but for its running title (top) and page number (foot)."""
    cells = "".join(f'<div class="p"><div class="h">{_html.escape(r)}</div><div class="f">{n}</div></div>'
                    for r, n in zip(running, numbers))
    doc = ("<!DOCTYPE html><html><head><style>@page { size: A4; margin: 0 } body { margin: 0; font: 8.5pt "
           "'DejaVu Sans', sans-serif; color: #555 } .p { position: relative; height: 296.9mm; page-break-after: "
           "always; overflow: hidden } .h { position: absolute; top: 9mm; left: 16mm; right: 16mm; text-align: "
           "right; font-style: italic; border-bottom: 0.3pt solid #bbb; padding-bottom: 1mm } .h:empty { border: 0 } "
           ".f { position: absolute; bottom: 9mm; left: 0; right: 0; text-align: center }</style></head>"
           f"<body>{cells}</body></html>")
    page = browser.new_page()
    page.set_content(doc)
    blob = page.pdf(prefer_css_page_size=True, print_background=False)
    page.close()
    return blob


def print_book(root: Path, out: Path | None = None) -> str:
    """The built book of ``root`` into ``out`` (default ``_build/pdf/learning-in-stages.pdf``); a one-line summary,
    which names every layout fault of the print (:func:`table_faults`, :func:`heading_faults`).
    :class:`FileNotFoundError` if the book is not built."""
    import logging
    from pypdf import PdfReader, PdfWriter
    from stagewise.core.book import browser as web
    logging.getLogger("pypdf").setLevel(logging.ERROR)     # Chromium's trailer size: a harmless warning

    html_dir = root / "_build" / "html"
    if not (html_dir / "index.html").is_file():
        raise FileNotFoundError(f"no built book in {html_dir}: run `stagewise book` (or `make book`) first")
    out = out or root / "_build" / "pdf" / "learning-in-stages.pdf"
    started = time.time()
    meta = _book_meta(root)
    pages = web.reading_order(root)
    document, entries = join_pages(html_dir, pages, meta)
    printable = html_dir / PRINT_NAME
    try:
        with web.serve(html_dir) as base_url, web.chromium() as chromium:
            printable.write_text(document, encoding="utf-8")
            first = _print(chromium, base_url + PRINT_NAME)
            _outline_pages(first, entries)
            toc = "".join(_toc_line(e) for e in entries)
            document = re.sub(r'(<nav class="stagewise-print-toc" id="contents"><h1>Contents</h1>).*?(</nav>)',
                              lambda m: m.group(1) + toc + m.group(2), document, count=1, flags=re.S)
            printable.write_text(document, encoding="utf-8")
            final = _print(chromium, base_url + PRINT_NAME)
            reader = PdfReader(io.BytesIO(final))
            starts = sorted((e.page, e.title) for e in entries if e.level == 1 and e.page)
            running, numbers = [], []
            for index in range(len(reader.pages)):
                number = index + 1
                current = [t for p, t in starts if p <= number]
                on_start = any(p == number for p, _ in starts)
                running.append("" if number <= 2 or on_start or not current else current[-1])
                numbers.append("" if number == 1 else str(number))
            overlay = PdfReader(io.BytesIO(_overlay(chromium, running, numbers)))
            faults = table_faults(chromium, base_url + PRINT_NAME) + heading_faults(reader, entries)
    finally:
        printable.unlink(missing_ok=True)
    writer = PdfWriter(clone_from=reader)
    for page, over in zip(writer.pages, overlay.pages):
        page.merge_page(over)
    parent = None
    writer.add_outline_item("Contents", 1)
    for entry in entries:                       # the bookmarks: every page (chapter) and its sections
        if entry.page is None:
            continue
        if entry.level == 1:
            parent = writer.add_outline_item(entry.title, entry.page - 1)
        elif parent is not None:
            writer.add_outline_item(entry.title, entry.page - 1, parent=parent)
    writer.add_metadata({"/Title": meta["title"], "/Author": meta["author"],
                         "/Subject": f"{meta['title']}, version {meta['version']}, commit {meta['commit']}",
                         "/Keywords": "incremental learning; saddle-to-saddle dynamics; low-rank bias; small "
                                      "initialization; executable book",
                         "/Creator": "stagewise pdf (Chromium)", "/Producer": "stagewise pdf (Chromium, pypdf)",
                         "/CreationDate": _dt.datetime.now(_dt.timezone.utc).strftime("D:%Y%m%d%H%M%SZ")})
    writer.page_mode = "/UseOutlines"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    with open(tmp, "wb") as handle:
        writer.write(handle)
    os.replace(tmp, out)
    missing = [e.title for e in entries if e.level == 1 and e.page is None]
    note = f"; no page found for {', '.join(missing)}" if missing else ""
    note += f"; {len(faults)} layout faults: " + "; ".join(faults) if faults else ""
    return f"{out} ({len(writer.pages)} pages, {time.time() - started:.0f} s{note})"
