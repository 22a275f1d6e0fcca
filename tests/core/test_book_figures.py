"""Every figure of the built book: its data sidecar, every preset drawn from it without torch (text sizes and
contrast measured), and what a reader finds under it on the page (downloads, menu, gallery, dark rendering)."""
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from stagewise.core.book import browser
from stagewise.core.book import build as book
from stagewise.core.book import figure_pages
from stagewise.core.figures import styles
from stagewise.core.run.registry import all_chapters

pytestmark = pytest.mark.book
HTML = ROOT / "_build" / "html"


def _figures():
    return figure_pages.book_figures(book.EXECUTED_DIR, [c.name for c in all_chapters()])


def test_every_figure_of_every_chapter_has_a_sidecar(built_book):
    for chapter in all_chapters():
        results = json.loads((book.EXECUTED_DIR / chapter.name / "results.json").read_text())
        assert results["figures"], chapter.name
        for stem in results["figures"]:
            meta = json.loads((book.EXECUTED_DIR / chapter.name / "figures" / f"{stem}.json").read_text())
            assert "sidecar" in meta, f"{stem}: drawn without a render function, cannot be restyled"
            assert meta["sidecar"]["caption"].strip() and meta["sidecar"]["alt"].strip(), stem


RENDER_ALL = """
import json, sys
sys.modules["torch"] = None                      # a restyle must not need torch
from stagewise.core.figures import restyle
from stagewise.core.figures import sidecar
from stagewise.core.figures import styles
import matplotlib.pyplot as plt
problems = []
for folder, stem in json.loads(sys.argv[1]):
    figure = sidecar.read(folder, stem)
    for name in styles.PRESETS:
        style = styles.resolve(name)
        fig = restyle.draw(figure, style)
        problems += [f"{stem} [{name}]: {p}" for p in styles.audit(fig, style)]
        plt.close(fig)
print(json.dumps(problems))
"""


def test_every_figure_renders_in_every_preset_without_torch_legibly(built_book):
    figures = [(str(f.folder), f.stem) for f in _figures()]
    assert figures
    done = subprocess.run([sys.executable, "-c", RENDER_ALL, json.dumps(figures)], capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    problems = json.loads(done.stdout.strip().splitlines()[-1])
    assert not problems, "\n".join(problems[:40])


def test_every_figure_on_its_page_has_its_menu_and_downloads(built_book):
    """Each figure of a chapter, on the page that shows it (the story page or the verification page)."""
    for chapter in all_chapters():
        pages = [HTML / "chapters" / f"{chapter.name}.html", HTML / "verification" / f"{chapter.name}.html"]
        texts = {page: page.read_text() for page in pages}
        for figure in figure_pages.book_figures(book.EXECUTED_DIR, [chapter.name]):
            page, text = next(((p, t) for p, t in texts.items() if f'id="{figure.anchor}"' in t), (None, ""))
            assert page is not None, f"{figure.anchor} is on neither page of {chapter.name}"
            start = text.index(f'id="{figure.anchor}"')
            block = text[start:text.index("</figure>", start)]
            assert 'class="only-light"' in block and 'class="only-dark"' in block, figure.anchor
            assert figure_pages.MENU_CLASS in block and "@misc{" in block and "stagewise figure" in block
            links = [h for h in __import__("re").findall(r'href="([^"#][^"]*)" download', block)]
            assert len(links) == 6, (figure.anchor, links)
            for link in links:
                assert (page.parent / link).resolve().is_file(), link


def test_the_gallery_shows_every_figure(built_book):
    gallery = (HTML / "chapters" / "figure-gallery.html").read_text()
    for figure in _figures():
        assert f'chapters/{figure.chapter}.html#{figure.anchor}"' in gallery or \
            f'{figure.chapter}.html#{figure.anchor}"' in gallery, figure.anchor
    assert gallery.count("<img") >= len(_figures())


def test_the_dark_theme_shows_the_dark_rendering(built_book):
    from test_pages import _need_chromium
    from stagewise.core.book import browser
    _need_chromium()
    chapter = all_chapters()[0].name
    with browser.serve(HTML) as base_url, browser.chromium() as chromium:
        for mode in ("light", "dark"):
            context = chromium.new_context(viewport={"width": 1280, "height": 900}, color_scheme=mode)
            page = context.new_page()
            page.goto(f"{base_url}chapters/{chapter}.html")
            page.evaluate(f"() => document.documentElement.dataset.theme = '{mode}'")
            shown = page.evaluate("""() => [...document.querySelectorAll('.stagewise-figure-pair img')]
                .filter(i => getComputedStyle(i).display !== 'none').map(i => i.className)""")
            assert shown and all(c == f"only-{mode}" for c in shown), (mode, shown)
            loaded = page.evaluate("""() => [...document.querySelectorAll('.stagewise-figure-pair img')]
                .every(i => i.complete && i.naturalWidth > 0)""")
            assert loaded, mode
            context.close()


def test_a_preset_list_names_each_with_its_use():
    assert set(styles.DESCRIPTIONS) == set(styles.PRESETS)


#: The smallest a gallery thumbnail is drawn at a 1366-pixel window (CSS pixels): wide enough to read a panel's
#: title, tall enough to tell its curves apart.
THUMBNAIL_MIN = (300, 110)


def _small(sizes):
    return [(src, round(w), round(h)) for src, w, h in sizes if w < THUMBNAIL_MIN[0] or h < THUMBNAIL_MIN[1]]


def test_gallery_thumbnails_are_legible(built_book, tmp_path):
    """Every thumbnail of the gallery is drawn at least THUMBNAIL_MIN at 1366 px (two a row, a wide strip the whole
    row). Control: the same wide strip in three columns of a 700-px column is a sliver, and is reported."""
    from PIL import Image
    from test_pages import _need_chromium
    _need_chromium()
    Image.new("RGB", (1600, 320), "white").save(tmp_path / "strip.png")
    cells = "".join('<div style="width:33%;display:inline-block"><img src="strip.png" style="width:100%"></div>'
                    for _ in range(3))
    (tmp_path / "sliver.html").write_text(f'<html><body><main style="width:700px">{cells}</main></body></html>')
    with browser.chromium() as chromium:
        with browser.serve(HTML) as base_url:
            sizes = browser.drawn_image_sizes(chromium, base_url + "chapters/figure-gallery.html")
        with browser.serve(tmp_path) as base_url:
            control = browser.drawn_image_sizes(chromium, base_url + "sliver.html")
    assert len(sizes) >= len(_figures()) and _small(sizes) == [], _small(sizes)
    assert len(_small(control)) == 3
