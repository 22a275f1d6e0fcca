"""Figures for talks: data sidecars, style presets and ``stagewise figure`` (restyle without recomputing)."""
from __future__ import annotations

import json
import subprocess
import sys

import matplotlib.text as mpl_text
import numpy as np
import pytest
from PIL import Image

from stagewise.core.figures import plots
from stagewise.core.figures import sidecar
from stagewise.core.figures import styles
from stagewise.core.figures.restyle import restyle

from conftest import stagewise

DATA = {"x": np.arange(1, 6), "series": {"gd": np.linspace(1, 0.1, 5), "flow": np.linspace(1, 0.2, 5)},
        "reference": {"theory": np.linspace(1, 0.15, 5)}, "xlabel": "step", "ylabel": "loss", "logy": True,
        "title": "a title", "names": ["a", "b"]}


def _write(folder, data=DATA, stem="demo-curves"):
    record = sidecar.write(folder, stem, data, {"render": "stagewise.core.figures.plots:curves", "caption": "Demo.",
                                                "alt": "", "claim": None, "labels": {}, "style": "book"})
    (folder / f"{stem}.json").write_text(json.dumps({"figure": stem, "chapter": "demo", "commit": "abc",
                                                     "seed": 0, "sidecar": record}))
    return record


@pytest.fixture
def run_dir(tmp_path):
    (tmp_path / "results.json").write_text(json.dumps({"chapter": "demo"}))
    _write(tmp_path / "figures")
    return tmp_path


def test_a_sidecar_gives_back_what_was_plotted(tmp_path):
    _write(tmp_path)
    back = sidecar.read(tmp_path, "demo-curves")
    assert back.renderer == "stagewise.core.figures.plots:curves" and back.caption == "Demo."
    assert np.array_equal(back.data["series"]["gd"], DATA["series"]["gd"])
    assert back.data["series"]["gd"].dtype == np.float64 and back.data["x"].dtype == DATA["x"].dtype
    assert back.data["names"] == ["a", "b"] and back.data["logy"] is True and back.data["xlabel"] == "step"


@pytest.mark.parametrize("damage, says", [
    ("no-json", "no such sidecar"),
    ("truncated-json", "not valid JSON"),
    ("no-npz", "data file is missing"),
    ("truncated-npz", "unreadable, truncated or damaged"),
    ("other-array", "arrays do not match"),
    ("other-values", "with other values"),
    ("provenance-only", "no figure data"),
])
def test_a_damaged_sidecar_is_one_line_naming_the_file(tmp_path, damage, says):
    _write(tmp_path)
    jpath, npath = tmp_path / "demo-curves.json", tmp_path / "demo-curves.npz"
    if damage == "no-json":
        jpath.unlink()
    elif damage == "truncated-json":
        jpath.write_text(jpath.read_text()[:40])
    elif damage == "no-npz":
        npath.unlink()
    elif damage == "truncated-npz":
        npath.write_bytes(npath.read_bytes()[:60])
    elif damage == "other-array":
        np.savez(npath, x=DATA["x"])
    elif damage == "other-values":
        arrays = dict(np.load(npath))
        arrays["series/gd"] = arrays["series/gd"] * 2
        np.savez(npath, **arrays)
    elif damage == "provenance-only":
        jpath.write_text(json.dumps({"figure": "demo-curves", "chapter": "demo"}))
    with pytest.raises(sidecar.SidecarError) as err:
        sidecar.read(tmp_path, "demo-curves")
    assert says in str(err.value) and "\n" not in str(err.value) and "demo-curves" in str(err.value)


def test_data_that_is_not_numbers_or_strings_is_refused_with_its_key(tmp_path):
    with pytest.raises(sidecar.SidecarError, match="'bad'"):
        sidecar.write(tmp_path, "x", {"bad": object()}, {})
    with pytest.raises(sidecar.SidecarError, match="without '/'"):
        sidecar.write(tmp_path, "x", {"a/b": 1.0}, {})


@pytest.mark.parametrize("preset", list(styles.PRESETS))
def test_every_preset_renders_and_passes_its_audit(run_dir, tmp_path, preset):
    paths = restyle(run_dir, "curves", preset, "png,svg,pdf", tmp_path / "out")
    assert [p.suffix for p in paths] == [".png", ".svg", ".pdf"] and all(p.stat().st_size > 0 for p in paths)
    style = styles.resolve(preset)
    figure = sidecar.read(run_dir / "figures", "demo-curves")
    from stagewise.core.figures.restyle import draw
    fig = draw(figure, style)
    assert styles.audit(fig, style) == []
    if style.min_text_pt:                       # talks and posters: every text at least the floor, measured
        assert min(size for size, _ in styles.text_sizes(fig)) >= style.min_text_pt
    if style.dark:                               # recoloured, not inverted: light text on the dark background
        assert styles.relative_luminance(style.background) < 0.05
        assert all(styles.contrast_ratio(t.get_color(), style.background) >= styles.MIN_CONTRAST
                   for t in fig.findobj(mpl_text.Text) if t.get_text().strip())
    svg = paths[1].read_text()
    assert "<text" in svg and "step" in svg     # text stays text
    assert b"stagewise" in paths[2].read_bytes() and preset.encode() in paths[0].read_bytes()  # provenance + style


def test_the_audit_sees_small_text_and_poor_contrast():
    style = styles.resolve("talk-16x9-dark")
    with style.context():
        fig, ax = style.subplots()
        ax.set_title("too small", fontsize=9)
        ax.text(0.5, 0.5, "dark on dark", color="#202020")
    problems = styles.audit(fig, style)
    assert any("too small" in p and "under 14" in p for p in problems)
    assert any("dark on dark" in p and "contrast" in p for p in problems)


def test_a_wide_book_figure_keeps_its_text_legible_in_the_column():
    """A figure wider than the page's column is scaled down there: the book's style enlarges text that would show
    under 9 px, and no more. Controls: the same figure without finish() fails the audit; a narrow one keeps its
    8 pt text (shown at full size, 8 pt is 12 px); the paper preset, printed at its own size, is left alone."""
    import matplotlib.pyplot as plt

    def strip(style, width):
        with style.context():
            fig, axes = style.subplots(1, 4, size=(width, 2.6))
            for ax in axes:
                ax.plot([0, 1], [0, 1], label="a curve")
                ax.set_title("panel", fontsize=8)
            axes[-1].legend(fontsize=8)
        return fig

    book = styles.resolve("book")
    raw = strip(book, 12.0)
    assert any("'panel'" in p and "9 px" in p for p in styles.audit(raw, book))
    done = book.finish(strip(book, 12.0))
    assert styles.audit(done, book) == []
    width = book.saved_width_in(done)
    smallest = min(size for size, _ in styles.text_sizes(done))
    shown_px = smallest / 72 * min(book.rc["figure.dpi"], styles.SCREEN_COLUMN_PX / width)
    assert 9.0 <= shown_px < 9.5, shown_px                      # enlarged to the floor, not beyond
    narrow = book.finish(strip(book, 5.0))
    assert min(size for size, text in styles.text_sizes(narrow) if text == "panel") == 8
    paper = styles.resolve("paper")
    assert paper.screen_floor_pt(12.0) is None and styles.audit(paper.finish(strip(paper, 12.0)), paper) == []
    plt.close("all")


def test_slide_sizes_are_exact_pixels(run_dir, tmp_path):
    one = restyle(run_dir, "curves", "talk-16x9", "png", tmp_path)[0]
    assert Image.open(one).size == (1920, 1080)
    two = restyle(run_dir, "curves", "talk-16x9-dark", "png", tmp_path, dpi="2x")[0]
    assert Image.open(two).size == (3840, 2160)
    assert Image.open(restyle(run_dir, "curves", "talk-4x3", "png", tmp_path)[0]).size == (1440, 1080)


def test_dark_presets_recolour_a_literal_black_line(run_dir):
    style = styles.resolve("book-dark")
    with style.context():
        fig, ax = style.subplots()
        line, = ax.plot([0, 1], [0, 1], color="k")
        style.finish(fig)
    assert styles.contrast_ratio(line.get_color(), style.background) > 10


def test_presets_compose_with_a_users_sheet(run_dir, tmp_path):
    sheet = tmp_path / "mine.mplstyle"
    sheet.write_text("lines.linewidth: 7\n")
    style = styles.resolve(f"talk-16x9,{sheet}")
    assert style.rc["lines.linewidth"] == 7 and style.fixed_size and style.rc["font.size"] == 20
    assert restyle(run_dir, "curves", f"talk-16x9,{sheet}", "png", tmp_path / "o")[0].name == \
        "demo-curves.talk-16x9+mine.png"


def test_an_existing_file_that_stagewise_did_not_write_is_left_alone(run_dir, tmp_path):
    (tmp_path / "demo-curves.book.png").write_bytes(b"someone else's picture")
    with pytest.raises(FileExistsError, match="not written by stagewise"):
        restyle(run_dir, "curves", "book", "png", tmp_path)
    assert (tmp_path / "demo-curves.book.png").read_bytes() == b"someone else's picture"
    again = restyle(run_dir, "curves", "paper", "png", tmp_path)      # its own earlier output: replaced
    assert restyle(run_dir, "curves", "paper", "png", tmp_path) == again


def test_the_command_lists_restyles_and_refuses_bad_input_in_one_line(run_dir, tmp_path):
    listed = stagewise("figure", str(run_dir), "--list")
    assert listed.returncode == 0 and "curves" in listed.stdout and "Demo." in listed.stdout
    made = stagewise("figure", str(run_dir), "curves", "--style", "talk-16x9-dark", "--formats", "png",
                     "--out", str(tmp_path / "o"))
    assert made.returncode == 0 and (tmp_path / "o" / "demo-curves.talk-16x9-dark.png").is_file()
    for argv, says in [(("curves", "--style", "talk"), "presets: book, book-dark, paper, talk-16x9"),
                       (("nope",), "figures: curves"),
                       (("curves", "--formats", "gif"), "--formats"),
                       (("curves", "--dpi", "huge"), "--dpi"),
                       ((), "give FIG_ID")]:
        bad = stagewise("figure", str(run_dir), *argv, "--out", str(tmp_path / "o"))
        assert bad.returncode == 2, (argv, bad.stderr)
        assert says in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    (run_dir / "figures" / "demo-curves.npz").write_bytes(b"PK\x03\x04 truncated")
    broken = stagewise("figure", str(run_dir), "curves", "--out", str(tmp_path / "o"))
    assert broken.returncode == 2 and "truncated" in broken.stderr and len(broken.stderr.strip().splitlines()) == 1


def test_a_restyle_never_imports_torch(run_dir, tmp_path):
    code = ("import sys; sys.modules['torch'] = None\n"
            "from stagewise.core.cli import main as cli\n"
            f"rc = cli.main(['figure', {str(run_dir)!r}, 'curves', '--style', 'poster', '--out', {str(tmp_path)!r}])\n"
            "assert rc == 0, rc\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_a_chapter_run_writes_a_sidecar_that_redraws_its_figure(fixture_chapters, tmp_path):
    done = stagewise("run", "smoke-test", "--quiet", "--out", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    figures = tmp_path / "r" / "figures"
    meta = json.loads((figures / "smoke-test-trace.json").read_text())
    assert meta["sidecar"]["claim"] == "prop-smoke-decay" and meta["commit"] and meta["parameters"]["eta"] == 0.1
    assert (figures / "dark" / "smoke-test-trace.png").is_file() and (figures / "smoke-test-trace.npz").is_file()
    back = sidecar.read(figures, "smoke-test-trace")
    assert len(back.data["series"]["gradient descent"]) == 20
    made = restyle(tmp_path / "r", "trace", "talk-16x9", "png", tmp_path / "talk")[0]
    assert Image.open(made).size == (1920, 1080)


def test_the_shared_curves_renderer_is_pure():
    style = styles.resolve("book")
    with style.context():
        fig = plots.curves(DATA, style)
    assert len(fig.axes[0].lines) == 3 and fig.axes[0].get_yscale() == "log"


def test_the_book_page_gets_the_dark_pair_the_menu_and_the_downloads(fixture_chapters, tmp_path):
    from stagewise.core.book import figure_pages
    executed = tmp_path / "executed"
    done = stagewise("run", "smoke-test", "--quiet", "--out", str(executed / "smoke-test"))
    assert done.returncode == 0, done.stderr
    html_dir = tmp_path / "html"
    page = html_dir / "chapters" / "smoke-test.html"
    page.parent.mkdir(parents=True)
    page.write_text('<p>before</p><figure class="align-default" id="fig-smoke-test-trace">\n'
                    '<img alt="../_images/abc.png" src="../_images/abc.png" />\n<figcaption>\n<p><span class='
                    '"caption-number">Figure 1.1 </span><span class="caption-text">Trace.</span></p>\n</figcaption>\n'
                    '</figure><figure id="fig-other"><img src="x.png"/></figure>')
    n = figure_pages.publish(html_dir, executed, {"smoke-test": page}, "https://example.org/book", "0.1.0")
    assert n == 1
    text = page.read_text()
    assert text.count('class="only-light"') == 1 and text.count('class="only-dark"') == 1
    assert 'href="../figures/smoke-test/smoke-test-trace.talk-16x9-dark.png"' in text
    assert "https://example.org/book/chapters/smoke-test.html#fig-smoke-test-trace" in text
    assert "Figure 1.1" in text and "stagewise figure book/executed/smoke-test trace" in text
    assert '<img src="x.png"/>' in text                                   # a figure without a sidecar: untouched
    target = html_dir / "figures" / "smoke-test"
    for name in ("smoke-test-trace.pdf", "smoke-test-trace.svg", "smoke-test-trace.png", "smoke-test-trace.dark.png",
                 "smoke-test-trace.talk-16x9.png", "smoke-test-trace.talk-16x9-dark.png", "smoke-test-trace.csv"):
        assert (target / name).is_file(), name
    assert Image.open(target / "smoke-test-trace.talk-16x9.png").size == (1920, 1080)
    rows = (target / "smoke-test-trace.csv").read_text().splitlines()
    assert rows[0] == "array,index,value" and sum(r.startswith("series/gradient descent,") for r in rows) == 20
    assert figure_pages.publish(html_dir, executed, {"smoke-test": page}, "https://example.org/book", "0.1.0") == 0
    gallery = figure_pages.gallery_page(executed, [("smoke-test", "Smoke test")])
    assert ":img-top: ./smoke-test/figures/smoke-test-trace.png" in gallery and ":link: fig-smoke-test-trace" in gallery


def test_dark_styles_lift_dim_data_colours():
    """Control for the dark styles' data colours: a dark-blue line, points and a bar on the dark background are
    under 3:1 as drawn, at 3:1 or more once lifted, and keep their hue; a fill of the background's own colour (a
    mask) and the text are left alone."""
    import matplotlib.pyplot as plt
    from matplotlib import colors as mcolors
    from stagewise.core.figures import restyle as figure_restyle
    dark = styles.resolve("book-dark")
    with dark.context():
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1], color="#08306b")
        ax.scatter([0.5], [0.5], color="#08306b")
        ax.bar([0.2], [0.3], width=0.1, color="#08306b")
        ax.axvspan(0.8, 0.9, color=dark.background)
        dim = figure_restyle.dim_data_colours(fig)
        assert len(dim) >= 3, dim
        figure_restyle.lift_dark_colours(fig)
        assert not figure_restyle.dim_data_colours(fig)
        r, g, b = mcolors.to_rgb(ax.lines[0].get_color())
        assert b > g > r                                   # still a blue
        assert np.allclose(ax.patches[-1].get_facecolor()[:3], mcolors.to_rgb(dark.background))
        plt.close(fig)


def test_every_stored_figure_keeps_its_data_visible_on_the_dark_slide():
    """Every figure of the stored runs at the paper's scale (three chapters' render functions), redrawn for the dark
    slide and the dark theme as the book ships them: no data colour under 3:1 against its background. (The book's
    own executions are written by the book lane while this lane runs, so they are not read here.)"""
    import matplotlib.pyplot as plt
    from pathlib import Path
    from conftest import ROOT
    from stagewise.core.figures import restyle as figure_restyle
    folders = [f for f in sorted((ROOT / "book" / "paper-scale").glob("*/figures"))
               if "-seed" not in f.parent.name]                # another seed draws the same figures
    drawn = 0
    for name in ("talk-16x9-dark", "book-dark"):
        style = styles.resolve(name)
        for folder in folders:
            for stem in sidecar.stems(Path(folder)):
                fig = figure_restyle.draw(sidecar.read(folder, stem), style)
                with style.context():
                    assert not figure_restyle.dim_data_colours(fig), (name, stem)
                plt.close(fig)
                drawn += 1
    assert drawn >= 2 * 10
