"""The built book as readers get it: every page in headless Chromium (math typeset from the build itself,
images loaded, no console error or failed request, internal links resolve, checks tables all passed, no
error output, code within its column), screenshots under _build/screenshots/, launch and download links
that exist, no stray cell results or local paths, and the PDF.

Without Chromium (Debian's `chromium` package) the browser tests are skipped with the reason, except in
CI (CI=true), where they fail: .ci/run installs it.
"""
import json
import os
import re
import subprocess
import unicodedata

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import ROOT, STAGEWISE
from stagewise.core.book import browser
from stagewise.core.run.registry import all_chapters

pytestmark = pytest.mark.book
HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
REPO = "https://github.com/learning-in-stages/learning-in-stages"


def _need_chromium() -> None:
    try:
        browser.chromium_path()
        import playwright  # noqa: F401
    except (browser.BrowserMissing, ImportError) as err:
        if os.environ.get("CI"):  # as test_rundir's mount tests: any CI value makes a skip a failure
            pytest.fail(f"CI must run the browser tests: {err}")
        pytest.skip(f"browser tests skipped: {err}")


@pytest.fixture(scope="module")
def page_reports(built_book):
    _need_chromium()
    reports = {}
    with browser.serve(HTML) as base_url, browser.chromium() as chromium:
        for path in browser.reading_order(ROOT):
            shot = SCREENSHOTS / (Path(path).stem + ".png")
            reports[path] = browser.audit(chromium, base_url, HTML, path, screenshot=shot)
    return reports


def test_every_page_reads_cleanly_in_chromium(page_reports):
    """No raw TeX, images loaded, no console errors or failed requests, links resolve, no error output."""
    assert len(page_reports) == 2 * len(all_chapters()) + 4   # intro, stories, verifications, appendix, gallery, bibliography
    problems = {path: r.problems() for path, r in page_reports.items() if r.problems()}
    assert not problems, json.dumps(problems, indent=1)


def test_math_is_typeset_offline(page_reports):
    """MathJax is served from _static (no CDN) and typesets every formula of every chapter."""
    for chapter in all_chapters():
        report = page_reports[f"chapters/{chapter.name}.html"]
        assert report.math_expected > 20 and report.math_elements == report.math_expected, chapter.name
    page = (HTML / "chapters" / "conservation-laws.html").read_text()
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', page)
    assert any("_static/mathjax/tex-mml-chtml.js" in s for s in scripts)
    assert not [s for s in scripts if s.startswith(("http:", "https:", "//"))], scripts


_SMART = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})


def _plain_quotes(text: str) -> str:
    """Text as typed: Sphinx's smart quotes and dashes undone (a row named "flow's" shows as "flow’s")."""
    return text.translate(_SMART).replace("---", "-").replace("--", "-")


def _as_typeset(name: str) -> str:
    """A row name as its page's HTML source holds it: its formulas as the TeX of inline math."""
    from stagewise.core.book import typeset
    return "".join(f"\\({s}\\)" if math else s for math, s in typeset.pieces(name))


def _page_text(path: Path) -> str:
    import html
    text = html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))
    return " ".join(text.split())


def test_every_verification_page_holds_every_row_of_its_run_and_links_both_ways(page_reports):
    """Each row of the chapter's results.json is on its verification page with its verdict (none failed); each
    statement's rows have a target that the story's verdict line links to, and link back to the statement."""
    for chapter in all_chapters():
        results = json.loads((ROOT / "book" / "executed" / chapter.name / "results.json").read_text())
        page = HTML / "verification" / f"{chapter.name}.html"
        text = _plain_quotes(_page_text(page))
        for row in results["checks"] + results.get("claims", []):
            shown = "reproduced" if row["kind"] == "empirical" and row["status"] == "pass" else row["status"]
            name = _plain_quotes(" ".join(_as_typeset(row["name"]).split()))
            assert f"{name}: {shown}" in text, f"{chapter.name}: row {name!r} ({shown}) not on its verification page"
            assert row["status"] != "fail", f"{chapter.name}: {name} failed"
        story = (HTML / "chapters" / f"{chapter.name}.html").read_text()
        labels = {r["statement"] for r in results["checks"] + results.get("claims", [])
                  if r.get("statement") and r["kind"] != "sanity"}
        ids = set(re.findall(r'\bid="([^"]+)"', page.read_text()))
        for label in labels:
            assert f"verify-{label}" in ids, f"{chapter.name}: no rows target for {label}"
            assert f"verification/{chapter.name}.html#verify-{label}" in story, \
                f"{chapter.name}: the statement {label} has no verdict line linking to its rows"
            assert re.search(rf'href="[^"]*#{re.escape(label)}"', page.read_text()), \
                f"{chapter.name}: no link back to {label}"            # on the story page, or a box derived here
        assert not re.search(r": FAIL\.", text), f"{chapter.name}: a failed row on the verification page"


@pytest.fixture(scope="module")
def story_shapes(built_book):
    """Every story page measured at 1366 x 768 (stagewise.core.book.shape), written to _build/screenshots/."""
    _need_chromium()
    from dataclasses import asdict
    from stagewise.core.book import shape
    shapes = {}
    with browser.serve(HTML) as base_url, browser.chromium() as chromium:
        for chapter in all_chapters():
            path = f"chapters/{chapter.name}.html"
            shapes[chapter.name] = shape.measure(chromium, base_url + path, path,
                                                 SCREENSHOTS / f"story-{chapter.name}-1366.png")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "story-shapes.json").write_text(json.dumps({k: asdict(v) for k, v in shapes.items()}, indent=1))
    return shapes


def test_every_story_page_has_the_shape_of_a_story(story_shapes):
    """At most 15 screens, first statement box and signature figure within 2 screens, goals, at least three short
    visible code cells, the verdict box, a summary, at least three answered exercises, further reading, machinery
    at most a tenth of the height, no process word."""
    problems = {name: s.problems() for name, s in story_shapes.items() if s.problems()}
    assert not problems, json.dumps(problems, indent=1)


def test_the_shape_test_rejects_a_page_that_is_not_a_story(tmp_path):
    """Control: a long page with code names, no goals, no exercises, a process word and its first box far down."""
    _need_chromium()
    from stagewise.core.book import shape
    filler = "".join(f"<p>Paragraph {i} of the run's tolerance, control and seeds rows.</p>" for i in range(400))
    (tmp_path / "bad.html").write_text(
        '<html><head><meta charset="utf-8"></head><body><main>' + filler +
        '<div class="proof theorem">Theorem</div><p>An earlier version of this chapter said so.</p>'
        '<h2>Summary</h2></main></body></html>')
    with browser.serve(tmp_path) as base_url, browser.chromium() as chromium:
        measured = shape.measure(chromium, base_url + "bad.html", "bad.html")
    problems = " ".join(measured.problems())
    for expected in ("screens", "first statement box", "first figure", "no goals", "exercises", "visible code",
                     "machinery", "process words: ['earlier version']"):
        assert expected in problems, (expected, problems)
    assert measured.summary and "no summary" not in problems


def test_no_page_holds_a_process_word(built_book):
    """The book speaks of the papers and of itself, never of its making: every page of the reading order."""
    from stagewise.core.book import shape
    found = {path: shape.process_words(_page_text(HTML / path)) for path in browser.reading_order(ROOT)}
    assert not {p: w for p, w in found.items() if w}, found
    assert shape.process_words("As the research note said, until this revision it was wrong.") == \
        ["research note", "until this revision"]                       # control: the list finds them


def test_figures_are_sharp_on_a_high_dpi_screen(built_book):
    """Every figure of a story page carries at least two image pixels per CSS pixel at 1366 x 768 (retina PNGs);
    control: an image shown at its natural size has one."""
    _need_chromium()
    ratios = {}
    with browser.serve(HTML) as base_url, browser.chromium() as chromium:
        context = chromium.new_context(viewport={"width": 1366, "height": 768})
        page = context.new_page()
        for chapter in all_chapters():
            browser._open(page, base_url + f"chapters/{chapter.name}.html")
            ratios[chapter.name] = page.evaluate(
                "() => [...document.querySelectorAll('main figure img, main div.cell_output img')]"
                ".filter(i => i.clientWidth > 100).map(i => i.naturalWidth / i.clientWidth)")
        context.close()
    soft = {name: [round(r, 2) for r in found if r < 1.9] for name, found in ratios.items()}
    assert all(ratios.values()) and not any(soft.values()), soft


def test_figure_text_is_legible_at_the_columns_width(built_book):
    """No text of a figure shows under 9 CSS px on its page at 1366 x 768: its smallest text (points, at the size the
    figure is saved) times the CSS px per inch it is shown at (the image's width on the page over the saved width).
    Control: the same figures drawn without the style's finish() have text under 9 px where they are wide."""
    _need_chromium()
    import matplotlib
    matplotlib.use("agg")
    import matplotlib.pyplot as plt
    from stagewise.core.book import build, figure_pages
    from stagewise.core.figures import restyle, sidecar, styles
    book = styles.resolve("book")
    shown = {}
    with browser.serve(HTML) as base_url, browser.chromium() as chromium:
        context = chromium.new_context(viewport={"width": 1366, "height": 768})
        page = context.new_page()
        for chapter in all_chapters():
            for kind in ("chapters", "verification"):
                browser._open(page, base_url + f"{kind}/{chapter.name}.html")
                shown.update(page.evaluate("() => Object.fromEntries([...document.querySelectorAll('main figure[id]')]"
                                           ".map(f => [f.id, (f.querySelector('img.only-light') || f.querySelector('img'))])"
                                           ".filter(([id, i]) => i).map(([id, i]) => [id, i.clientWidth]))"))
        context.close()
    small, unfinished, measured = {}, {}, 0
    for figure in figure_pages.book_figures(build.EXECUTED_DIR, [c.name for c in all_chapters()]):
        if figure.anchor not in shown:
            continue
        data = sidecar.read(figure.folder, figure.stem)
        for finished in (True, False):
            with book.context():
                fig = restyle.draw(data, book) if finished else restyle.renderer(data.renderer)(data.data, book)
                px_per_pt = shown[figure.anchor] / book.saved_width_in(fig) / 72
                least = min(size for size, _ in styles.text_sizes(fig)) * px_per_pt
            plt.close(fig)
            if least < styles.MIN_SCREEN_TEXT_PX - 0.05:
                (small if finished else unfinished)[figure.anchor] = round(least, 1)
        measured += 1
    assert measured >= 20 and not small, small
    assert unfinished, "control: no figure of the book needs its text enlarged"


OVERLAPS_JS = """() => [...document.querySelectorAll('main figure[id]')].map(f => {
  const b = f.querySelector('.stagewise-figure-menu > summary'), i = f.querySelector('img.only-light') || f.querySelector('img');
  if (!b || !i) return null;
  const r = b.getBoundingClientRect(), q = i.getBoundingClientRect();
  const w = Math.min(r.right, q.right) - Math.max(r.left, q.left), h = Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top);
  return [f.id, w > 0 && h > 0 ? Math.round(w * h) : 0];
}).filter(x => x)"""


def test_a_figures_menu_button_covers_none_of_the_figure(built_book):
    """The "download · cite" button of each figure sits above the image, so it hides no legend or title of the
    figure. Control: the same button placed in the figure's corner (no shift) covers part of the images that fill
    the column (at least five of them)."""
    _need_chromium()
    with browser.serve(HTML) as base_url, browser.chromium() as chromium:
        page = chromium.new_context(viewport={"width": 1366, "height": 768}).new_page()
        covered, control = {}, []
        for chapter in all_chapters():
            browser._open(page, base_url + f"chapters/{chapter.name}.html")
            covered.update({f: a for f, a in page.evaluate(OVERLAPS_JS) if a})
            page.add_style_tag(content=".stagewise-figure-menu { transform: none !important; }")
            control += [a for _, a in page.evaluate(OVERLAPS_JS)]
    assert control and not covered, covered
    assert sum(a > 0 for a in control) >= 5, control


def test_screenshots_are_saved_per_page(page_reports):
    from PIL import Image
    for path in page_reports:
        with Image.open(SCREENSHOTS / (Path(path).stem + ".png")) as image:
            assert image.width == 1280 and image.height >= 900, path


def test_the_audit_catches_raw_tex_and_a_broken_image(built_book, tmp_path):
    """Control: a page with MathJax missing, a missing image, a dead link, Markdown left as text (a table, bold), a
    table column narrower than its word and a formula that scrolls or passes its box is reported, not passed; the
    same table inside a code block is not, nor a word broken at its hyphens."""
    _need_chromium()
    (tmp_path / "bad.html").write_text(
        '<html><head><meta charset="utf-8"></head><body><main style="width:400px"><p>\\(x^2\\)</p><span class="math">\\(x\\)</span>'
        '<img src="missing.png"><a href="nowhere.html">x</a><p>| a | b | |---|---| | 1 | 2 |</p>'
        '<p>| a | b | |\u2014|\u2014| | 1 | 2 |</p><p>a **bold** word</p>'
        '<div class="highlight"><pre>| fine | in code |\n|---|---|</pre></div>'
        '<table style="width:600px"><tr><td>wider than the column</td></tr></table>'
        '</main></body></html>')
    (tmp_path / "narrow.html").write_text(
        '<html><head><meta charset="utf-8"></head><body><main style="width:400px">'
        '<table style="width:40px"><tr><td style="overflow-wrap:anywhere">initialization</td></tr>'
        '<tr><td>step-size-change</td></tr></table>'
        '<mjx-container display="true" aria-label="scrolling" style="display:block;overflow-x:auto;width:100px">'
        '<span style="display:inline-block;width:300px">x</span></mjx-container>'
        '<p style="width:100px;white-space:nowrap">a <mjx-container aria-label="clipped" style="display:inline-block;'
        'width:300px">y</mjx-container></p>'
        '</main></body></html>')
    with browser.serve(tmp_path) as base_url, browser.chromium() as chromium:
        report = browser.audit(chromium, base_url, tmp_path, "bad.html")
        narrow = browser.audit(chromium, base_url, tmp_path, "narrow.html")
    assert report.raw_tex and report.broken_images and report.broken_links and report.failed_requests
    assert report.raw_markdown == ["|---|", "|\u2014|", "**bold**"], report.raw_markdown
    assert report.wide_tables == 1
    assert any("none typeset" in p for p in report.problems())
    assert narrow.broken_words == ["initialization"], narrow.broken_words     # a hyphen is a fair place to break
    assert narrow.overflowing_math == ["scrolls: scrolling", "past its box: clipped"], narrow.overflowing_math
    assert not report.broken_words and not report.overflowing_math


def test_the_sliders_move_the_plots_offline(built_book):
    """Each declared slider (front matter ``sliders:``) is on its story page after its static figure, and moving it
    with the keyboard in Chromium changes the plot (served from the build, no network: a failed request to a CDN
    would show in the page audit). The mechanism's control, an unlinked slider, is in tests/core/test_interactive.py."""
    from stagewise.core.book import interactive
    _need_chromium()
    sliders = [(c.name, f) for c in all_chapters() for f in interactive.specs(c)]
    assert len(sliders) >= 2
    with browser.serve(HTML) as base_url, browser.chromium() as chromium:
        for chapter, figure_id in sliders:
            before, after, changed = browser.move_slider(chromium, f"{base_url}chapters/{chapter}.html", figure_id)
            assert before != after and changed, (chapter, figure_id, before, after)


def test_the_front_page_redirects_to_the_introduction(built_book):
    assert 'url=book/intro.html' in (HTML / "index.html").read_text().replace('"', "")


def _links(page: str) -> list[str]:
    return re.findall(r'href="([^"]+)"', page)


def test_launch_and_download_links_point_at_files_that_exist(built_book):
    """Binder opens the chapter source (tracked in git); downloads are files of the build; no Colab."""
    tracked = set(subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT).stdout.split())
    for chapter in all_chapters():
        page_path = HTML / "chapters" / f"{chapter.name}.html"
        links = _links(page_path.read_text())
        binder = [link for link in links if "mybinder.org" in link]
        assert binder, chapter.name
        for link in binder:
            target = parse_qs(urlsplit(link.replace("&amp;", "&")).query)["urlpath"][0].split("/", 1)[1]
            assert target in tracked, link
        downloads = [link for link in links if "_sources/" in link]
        assert downloads, chapter.name
        for link in downloads:
            assert (page_path.parent / link).resolve().is_file(), link
        assert not [link for link in links if "colab" in link]
        for link in links:
            if link.startswith(f"{REPO}/blob/"):
                assert link.split("/blob/main/")[1].split("?")[0] in tracked, link


def test_no_stray_cell_results_or_local_paths(built_book):
    """Cells print nothing the prose does not use (only rich displays), and no build-machine path leaks."""
    for chapter in all_chapters():
        notebook = json.loads((ROOT / "book" / "executed" / chapter.name / f"{chapter.name}.ipynb").read_text())
        stray = [o["data"].get("text/plain") for cell in notebook["cells"] if cell["cell_type"] == "code"
                 for o in cell.get("outputs", []) if o["output_type"] == "execute_result"
                 and not {"text/html", "text/markdown", "image/png"} & set(o["data"])]
        assert not stray, f"{chapter.name}: {stray[:5]}"
        assert not any("injected-parameters" in c.get("metadata", {}).get("tags", []) for c in notebook["cells"])
    local = [str(ROOT), "/tmp/", ".partial-", "PosixPath("]
    for page in HTML.rglob("*.html"):
        text = page.read_text()
        assert not [s for s in local if s in text], page


@pytest.fixture(scope="module")
def book_pdf(built_book, tmp_path_factory):
    _need_chromium()
    out = tmp_path_factory.mktemp("pdf") / "book.pdf"
    done = subprocess.run([STAGEWISE, "pdf", "--out", str(out)], capture_output=True, text=True, cwd=ROOT,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    from pypdf import PdfReader
    return out, PdfReader(out), done.stdout


def _destinations(reader) -> dict[str, int]:
    pages = {}
    for name, dest in reader.named_destinations.items():
        try:
            pages[str(name).lstrip("/")] = reader.get_destination_page_number(dest) + 1
        except Exception:  # noqa: BLE001 - unresolvable destinations are counted by the tests below
            continue
    return pages


def test_pdf_of_the_book(book_pdf):
    """`stagewise pdf` prints the book offline; its first pages are not blank; checks and references inside."""
    import pypdfium2
    out, reader, _ = book_pdf
    text = "".join(page.extract_text() or "" for page in reader.pages)
    assert len(reader.pages) > 40
    assert re.search(r"Control,", text) and "tolerance" in text and "Theorem" in text and "Bibliography" in text
    assert sum(len(page.images) for page in reader.pages) >= 6 * 3          # figures of every chapter
    document = pypdfium2.PdfDocument(str(out))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)          # this test alone, before the page screenshots
    for index in range(3):
        image = document[index].render(scale=0.5).to_pil().convert("L")
        low, high = image.getextrema()
        assert high - low > 100, f"page {index + 1} is blank"
        image.save(SCREENSHOTS / f"pdf-page-{index + 1}.png")


def test_the_pdf_is_a_book(book_pdf):
    """Title page with version and commit; metadata; an outline whose chapters are the table of contents' (in
    order, at the pages the contents give); page numbers in the footer; running chapter titles."""
    from stagewise import __version__
    _, reader, _ = book_pdf
    meta = reader.metadata
    assert meta.title == "Learning in Stages" and meta.author and __version__ in meta.subject and meta["/Keywords"]
    assert meta.creation_date is not None and "pypdf" != (meta.producer or "pypdf")[:5]
    title_page = reader.pages[0].extract_text()
    assert "Learning in Stages" in title_page and f"Version {__version__}" in title_page and "commit" in title_page
    outline = [(item.title, reader.get_destination_page_number(item) + 1) for item in reader.outline
               if not isinstance(item, list)]
    numbered = re.compile(r"^\d+\.\s+")                 # the outline shows the chapters' numbers
    assert [numbered.sub("", t) for t, _ in outline if t != "Contents"] == _toc_headings()
    contents = " ".join(reader.pages[i].extract_text()              # every page of the contents, up to the first
                        for i in range(outline[0][1] - 1, outline[1][1] - 1))   # entry after them
    contents = unicodedata.normalize("NFKC", contents)              # the printed ligatures (fi) read as letters
    assert outline[0][0] == "Contents" and contents
    for title, page in outline[1:]:             # the contents give each chapter's page, and it is the outline's
        assert re.search(re.escape(title.split(" ")[-1]) + r"[\s.]*" + str(page) + r"\b", contents), (title, page)
    chapter_title, chapter_page = outline[2]
    later = reader.pages[chapter_page + 1].extract_text()            # a page inside the first chapter
    assert chapter_title in later and str(chapter_page + 2) in later.split()    # running title, page number


def _toc_headings() -> list[str]:
    """Each page's first heading, in reading order, as the built HTML shows it."""
    found = []
    for path in browser.reading_order(ROOT):
        match = re.search(r"<h1>(.*?)</h1>", (HTML / path).read_text(), re.S)
        found.append(re.sub(r"\s+", " ", re.sub(r"<[^>]+>|#", "", match.group(1))).strip())
    return found


def test_internal_links_of_the_pdf_jump_inside_it(book_pdf):
    """The contents, cross-references, figure references and citations are links to places in the PDF (named
    destinations) that exist: a sample from the contents and from every chapter."""
    _, reader, _ = book_pdf
    destinations = _destinations(reader)
    links = []
    for number, page in enumerate(reader.pages, start=1):
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            if annot.get("/Subtype") == "/Link" and annot.get("/Dest") is not None:
                links.append((number, str(annot["/Dest"]).lstrip("/")))
    assert len(links) > 200
    unresolved = [(n, d) for n, d in links if d not in destinations]
    assert not unresolved, unresolved[:10]
    kinds = {"bibliography": any("bibliography" in d for _, d in links),
             "figure": any("--fig-" in d for _, d in links), "theorem": any("--thm-" in d for _, d in links)}
    assert all(kinds.values()), kinds
    toc = [(n, d) for n, d in links if n <= 3 and d.startswith("p-chapters-") and "--" not in d]
    assert toc and all(destinations[d] > n for n, d in toc)


def test_the_pdf_prints_every_title_heading_and_table_readably(book_pdf):
    """Each chapter's first page opens with its title; no section heading is split over two pages or left at the
    foot of one; every table prints with its columns at least as wide as their words and at least four rows a page
    (:func:`stagewise.core.book.pdf.table_faults` and :func:`heading_faults`, which `stagewise pdf` runs and names
    in its summary). The audit's control is the next test."""
    _, reader, summary = book_pdf
    assert "layout faults" not in summary, summary
    stated = int(re.search(r"about (\d+) A4\s+pages", (ROOT / "README.md").read_text()).group(1))
    assert abs(stated - len(reader.pages)) <= 0.1 * len(reader.pages), (stated, len(reader.pages))  # README's count
    for item in reader.outline:
        if isinstance(item, list) or item.title == "Contents":
            continue
        first = unicodedata.normalize("NFKC", reader.pages[reader.get_destination_page_number(item)].extract_text())
        first = re.sub(r"(\w)-\s+(\w)", r"\1-\2", first)            # a hyphen the text extraction split
        title = re.sub(r"^\d+\.\s+", "", item.title)
        assert " ".join(title.split()[:4]) in " ".join(first.split()), (item.title, first[:200])


def test_the_print_audit_catches_crushed_tables_and_stranded_headings(tmp_path):
    """Control: a column narrower than its word, a row taller than a quarter of a page and a table past the column
    are faults of the print; so are a heading whose page does not hold it whole and one that ends its page; a
    section of code cells only prints nothing."""
    from bs4 import BeautifulSoup
    from stagewise.core.book import pdf
    _need_chromium()
    tall = "<br>".join(["line"] * 40)
    (tmp_path / "print.html").write_text(
        '<html><head><meta charset="utf-8"></head><body><article><section class="stagewise-print-page" id="p-x">'
        '<table style="width:60px"><tr><td style="overflow-wrap:anywhere">initialization</td></tr></table>'
        f'<table><tr><td>{tall}</td></tr></table><table style="width:2000px"><tr><td>wide</td></tr></table>'
        '<table><tr><td>fine</td><td>step-size-change</td></tr></table>'
        '</section></article></body></html>')
    with browser.serve(tmp_path) as base_url, browser.chromium() as chromium:
        faults = pdf.table_faults(chromium, base_url + "print.html")
    assert any('narrower than the word "initialization"' in f for f in faults), faults
    assert any("px tall" in f for f in faults) and any("past the printed column" in f for f in faults), faults
    assert len(faults) == 3, faults

    class Page:
        def __init__(self, text):
            self.text = text

        def extract_text(self):
            return self.text

    class Reader:
        pages = [Page("1.1. Setting " + "words " * 30), Page("text 1.2. A heading at the foot 7"),
                 Page("the end of a section 1.3. A heading"), Page("split over two 1.4. Theorem 2 as λ → 0 " + "x" * 90)]
    entries = [pdf.Entry(2, "1.1. Setting", "a", 1), pdf.Entry(2, "1.2. A heading at the foot", "b", 2),
               pdf.Entry(2, "1.3. A heading split over two", "c", 3),
               pdf.Entry(2, "1.4. Theorem 2 as \\(\\lambda\\to0\\)", "d", 4)]
    found = pdf.heading_faults(Reader(), entries)
    assert len(found) == 2 and "foot of page 2" in found[0] and "split over two pages" in found[1], found
    code_only = BeautifulSoup('<section id="s"><h2>How</h2><div class="cell"><div class="cell_input">x = 1</div>'
                              '</div></section>', "html.parser").section
    prose = BeautifulSoup('<section id="s"><h2>How</h2><p>Words.</p></section>', "html.parser").section
    assert not pdf._prints_something(code_only) and pdf._prints_something(prose)


def _raw_formulas(page_html: str, selector: str, pattern=None) -> list[str]:
    """The text of the elements ``selector`` picks that still reads as ASCII math (or matches ``pattern``) once their
    typeset math (Sphinx's ``span.math``) and code are left out."""
    from bs4 import BeautifulSoup
    from stagewise.core.book import typeset
    soup = BeautifulSoup(page_html, "html.parser")
    for tag in soup.select("span.math, code, pre, .highlight"):
        tag.decompose()
    pattern = pattern or typeset.ASCII_MATH
    return [t.get_text(" ", strip=True) for t in soup.select(selector) if pattern.search(t.get_text(" ", strip=True))]


def test_row_names_show_their_formulas_as_math(built_book):
    """Each row's name on its verification page (the bold words that open its line) shows its formula typeset,
    not as ASCII (``eta^2``, ``||beta(T) - X^+ Y||_F``); no page shows as plain text a symbol the typesetting knows
    (a spelt-out Greek letter, ``a_j``, ``||w||``, ``<=``), nor the formulas of the mutation catalogues' examples.
    Control: a name left raw is found."""
    from stagewise.core.book import typeset
    rows = 0
    for chapter in all_chapters():
        page = (HTML / "verification" / f"{chapter.name}.html").read_text()
        rows += len(re.findall(r"<li><p><strong>", page))
        assert not _raw_formulas(page, "li > p > strong:first-child"), chapter.name
    assert rows > 100
    for page in [*(HTML / "verification").glob("*.html"), *(HTML / "chapters").glob("*.html")]:
        left = [x for x in _raw_formulas(page.read_text(), "article :is(p, td, th, figcaption)") if typeset.symbols(x)]
        assert not left, (page.name, left[:3])            # every symbol the typesetting knows is typeset
    for page in [*(HTML / "verification").glob("*.html"), HTML / "chapters" / "what-the-checks-can-catch.html"]:
        prose = " ".join(_raw_formulas(page.read_text(), "p, li, td"))
        assert not [s for s in ("W_K W_Q^T", "s_{T-1}", "1/sqrt(fan_in)", "||beta(T) - X^+ Y||_F", "Delta KQ", ")^")
                    if s in prose], page.name
    for page in [*(HTML / "verification").glob("*.html"), *(HTML / "chapters").glob("*.html")]:
        left = _raw_formulas(page.read_text(), "article :is(p, td, th, li, figcaption)", typeset.CODE_NAME)
        assert not left, (page.name, left[:3])            # a code name (eta_white, head_matrices) is set as code
    planted = "<ul><li><p><strong>the change of W_Q^T</strong>: pass.</p></li></ul>"
    assert _raw_formulas(planted, "li > p > strong:first-child") == ["the change of W_Q^T"]
    planted = "<article><p>holds: eta_white = 0.09, <code>pga_eta</code></p></article>"
    assert _raw_formulas(planted, "article p", typeset.CODE_NAME) == ["holds: eta_white = 0.09,"]


def _claim_estimates(page_html: str) -> dict[str, str]:
    """The claims table's rows (first cell -> the cell of its estimate column), from the table whose header names
    the estimate; empty without such a table."""
    from bs4 import BeautifulSoup
    soup = BeautifulSoup(page_html, "html.parser")
    for table in soup.select("table"):
        head = [th.get_text(" ", strip=True) for th in table.select("thead th")]
        column = next((i for i, h in enumerate(head) if "estimate" in h), None)
        if column is not None:
            return {tr.select("td")[0].get_text(" ", strip=True): tr.select("td")[column].get_text(" ", strip=True)
                    for tr in table.select("tbody tr")}
    return {}


def test_the_claims_table_shows_each_estimate_with_its_interval(built_book):
    """transformer-rank's claims table gives each trend claim's estimate with its interval (the fitted change ± two
    standard errors, as the run recorded them) beside the verdict, whose number is the interval's end. Control: a
    table with the verdict column alone has no estimate to show."""
    page = (HTML / "verification" / "transformer-rank.html").read_text()
    values = json.loads((ROOT / "book" / "executed" / "transformer-rank" / "results.json").read_text())["values"]
    rows = _claim_estimates(page)
    trends = {k: v for k, v in rows.items() if "grows" in k or "GPT-2" in k or ("the same" in k and ("Adam" in k or
                                                                                                  "SGD" in k))}
    assert len(trends) == 6, rows.keys()                  # ViT: Adam and SGD, both matrices; char-GPT: both
    assert all("±" in cell and "control" in cell for cell in trends.values()), trends
    adam_kq = next(cell for name, cell in trends.items() if "Adam" in name and "grows" in name)
    est = f"{values['trend_adam_kq']:+.2f} ± {values['trend_hw_adam_kq']:.2f}".replace("-", "−")
    assert est in adam_kq.replace("-", "−"), (est, adam_kq)
    planted = ("<table><thead><tr><th>paper claim</th><th>verdict</th></tr></thead><tbody><tr><td>grows</td>"
               "<td>not reproduced (-0.312 against 0)</td></tr></tbody></table>")
    assert _claim_estimates(planted) == {}
