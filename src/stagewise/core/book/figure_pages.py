"""The book's figures as a reader takes them away: downloads, talk renderings, data, citation, dark mode, gallery.

After Sphinx has written the pages, :func:`publish` goes through every chapter's executed figures
(``book/executed/<chapter>/figures``) and, for each figure with a data sidecar,

- copies its PDF, SVG and PNG to ``_build/html/figures/<chapter>/`` under their stable stems, renders the 16:9 talk
  PNGs (light and dark) from the sidecar (only when missing or older than the sidecar) and writes its data as CSV;
- rewrites the figure on the chapter's page: the book's rendering is shown in the light theme and the dark one in
  the dark theme (a light/dark pair, never an inverted image), and under the caption a small menu links the
  downloads, the data, "cite this figure" (BibTeX naming the book, its version and commit, the chapter, the figure
  number and its permanent anchor) and the one-line ``stagewise figure`` command that restyles it.

:func:`gallery_page` writes the Markdown of the figure gallery (every figure as a thumbnail with its caption,
linking to its place in the chapter), generated before the Sphinx build like the appendix of the mutation matrix.
"""
from __future__ import annotations

import csv
import html
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stagewise.core.figures import sidecar
from stagewise.core.run.rundir import write_text_atomic

TALK_STYLES = ("talk-16x9", "talk-16x9-dark")
#: The style of the image the book shows in its dark theme.
DARK_STYLE = "book-dark"
MENU_CLASS = "stagewise-figure-menu"


@dataclass
class BookFigure:
    chapter: str
    figure_id: str
    stem: str
    folder: Path                  # book/executed/<chapter>/figures
    meta: dict

    @property
    def anchor(self) -> str:
        return f"fig-{self.chapter}-{self.figure_id}"

    @property
    def caption(self) -> str:
        return self.meta["sidecar"].get("caption", "")

    @property
    def alt(self) -> str:
        return self.meta["sidecar"].get("alt", "") or self.caption


def book_figures(executed: Path, chapters: list[str]) -> list[BookFigure]:
    """The figures of the executed chapters that carry a sidecar, in the order of the chapters and their run."""
    found = []
    for chapter in chapters:
        folder = Path(executed) / chapter / "figures"
        try:
            order = json.loads((folder.parent / "results.json").read_text()).get("figures", [])
        except (OSError, json.JSONDecodeError):
            continue
        for stem in order:
            try:
                meta = json.loads((folder / f"{stem}.json").read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if "sidecar" in meta:
                found.append(BookFigure(chapter, stem[len(chapter) + 1:], stem, folder, meta))
    return found


def write_csv(figure: BookFigure, path: Path) -> None:
    """The figure's data in long form, one row per number: ``array, index, value`` (the index as i or i;j;...),
    then the small values (strings and numbers the render function uses) with an empty index."""
    data = sidecar.read(figure.folder, figure.stem)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["array", "index", "value"])
        with np.load(figure.folder / f"{figure.stem}.npz", allow_pickle=False) as archive:
            for name in sorted(archive.files):
                array = archive[name]
                for index in np.ndindex(array.shape):
                    out.writerow([name, ";".join(map(str, index)), array[index].item()])
        for name, value in sorted(data.sidecar.get("values", {}).items()):
            out.writerow([name, "", json.dumps(value) if not isinstance(value, (str, int, float)) else value])


def _newer(target: Path, source: Path) -> bool:
    return target.is_file() and target.stat().st_mtime >= source.stat().st_mtime


def _drawing_code(renderer: str) -> list[Path]:
    """The files a redrawing depends on besides its sidecar: the render function's module, the restyling and
    style code and the style sheets."""
    import importlib
    from stagewise.core.figures import restyle, styles
    module = Path(importlib.import_module(renderer.split(":")[0]).__file__)
    return [module, Path(restyle.__file__), Path(styles.__file__), *sorted(styles.SHEETS_DIR.glob("*.mplstyle"))]


def export_files(figure: BookFigure, target: Path) -> dict[str, str]:
    """Copy and render the figure's downloads into ``target`` (``_build/html/figures/<chapter>``); returns their
    file names by kind. Talk renderings are redrawn only when the sidecar is newer than them."""
    from stagewise.core.figures import restyle
    from stagewise.core.figures import styles
    from stagewise.core.figures.export import save
    import matplotlib.pyplot as plt

    target.mkdir(parents=True, exist_ok=True)
    names = {}
    for fmt in ("pdf", "svg", "png"):
        shutil.copy2(figure.folder / f"{figure.stem}.{fmt}", target / f"{figure.stem}.{fmt}")
        names[fmt] = f"{figure.stem}.{fmt}"
    source = figure.folder / f"{figure.stem}.npz"
    data = None
    provenance = {k: v for k, v in figure.meta.items() if k not in ("sidecar", "figure")}
    # the dark theme's image and the talk renderings, drawn from the sidecar (restyle.draw lifts dim data colours),
    # again when the sidecar or the drawing code is newer than them
    code = _drawing_code(str(figure.meta["sidecar"].get("render", "")) or "stagewise")
    for name, suffix in ((DARK_STYLE, "dark"), *((t, t) for t in TALK_STYLES)):
        out = target / f"{figure.stem}.{suffix}.png"
        if not all(_newer(out, path) for path in (source, *code)):
            data = data or sidecar.read(figure.folder, figure.stem)
            style = styles.resolve(name)
            fig = restyle.draw(data, style)
            save(fig, f"{figure.stem}.{suffix}", target, provenance, style, ("png",))
            plt.close(fig)
        names[suffix] = out.name
    csv_path = target / f"{figure.stem}.csv"
    if not _newer(csv_path, source):
        write_csv(figure, csv_path)
    names["csv"] = csv_path.name
    return names


def bibtex(figure: BookFigure, number: str, url: str, version: str) -> str:
    """A BibTeX entry for one figure: the book, its version and commit, the chapter, the figure's number and URL."""
    commit = str(figure.meta.get("commit", ""))[:12]
    year = str(figure.meta.get("date", ""))[:4] or "2026"
    key = re.sub(r"[^a-z0-9]+", "", f"learninginstages{figure.chapter}{figure.figure_id}")
    title = f"{number}: {figure.caption}".strip(": ") if figure.caption else number
    return (f"@misc{{{key},\n"
            f"  title        = {{{title}}},\n"
            f"  author       = {{{{The Learning in Stages authors}}}},\n"
            f"  howpublished = {{Learning in Stages, chapter {figure.chapter}, {number}}},\n"
            f"  year         = {{{year}}},\n"
            f"  version      = {{{version}}},\n"
            f"  note         = {{Commit {commit}; parameters and seed in the figure's metadata}},\n"
            f"  url          = {{{url}}}\n}}")


def _menu(figure: BookFigure, files: dict[str, str], prefix: str, number: str, url: str, version: str) -> str:
    def link(kind: str, label: str) -> str:
        return (f'<a class="reference download" href="{prefix}{files[kind]}" download>{label}</a>'
                if kind in files else "")
    command = (f"stagewise figure book/executed/{figure.chapter} {figure.figure_id} --style talk-16x9-dark")
    items = [link("pdf", "PDF"), link("svg", "SVG"), link("png", "PNG"), link("talk-16x9", "16:9 talk PNG"),
             link("talk-16x9-dark", "16:9 talk PNG, dark"), link("csv", "data (CSV)")]
    # A small button in the figure's top corner that opens the panel over the figure: the downloads take no room
    # in the page (a reader scrolling the story sees the figure and its caption only).
    return (f'<details class="{MENU_CLASS}" data-figure="{html.escape(figure.anchor)}">'
            '<summary title="Download, cite or restyle this figure">download · cite</summary>'
            '<div class="stagewise-figure-panel">'
            f'<a class="stagewise-permalink" href="#{figure.anchor}" title="Permanent link to this figure (paste it '
            f'into a talk\'s notes)">permalink</a> · ' + " · ".join(i for i in items if i) +
            '<details class="stagewise-cite"><summary>cite this figure</summary>'
            f'<pre>{html.escape(bibtex(figure, number, url, version))}</pre></details>'
            '<details class="stagewise-restyle"><summary>restyle it</summary>'
            f'<pre>{html.escape(command)}</pre></details></div></details>')


# Sphinx wraps a figure's image in a link to the full-size file when the image is scaled (the 2x PNGs are).
_FIGURE = re.compile(r'(<figure[^>]*\bid="(?P<id>fig-[^"]+)"[^>]*>\s*(?:<a\b[^>]*>\s*)?)(?P<img><img\b[^>]*>)'
                     r'(?P<mid>.*?)(</figure>)', re.S)


def patch_page(page: Path, figures: dict[str, BookFigure], files: dict[str, dict[str, str]], prefix: str,
               base_url: str, page_url: str, version: str) -> int:
    """Rewrite one chapter page: the light/dark pair and the menu under each figure that has a sidecar. Idempotent
    (a page already patched is left as it is). Returns the number of figures patched."""
    text = page.read_text(encoding="utf-8")
    if MENU_CLASS in text:
        return 0
    count = 0

    def replace(match: re.Match) -> str:
        nonlocal count
        figure = figures.get(match["id"])
        if figure is None:
            return match.group(0)
        count += 1
        names = files[figure.anchor]
        number = re.search(r'caption-number">([^<]+)<', match["mid"])
        number = number.group(1).strip() if number else "Figure"
        alt = html.escape(figure.alt, quote=True)
        light = re.sub(r'\balt="[^"]*"', f'alt="{alt}"', match["img"]).replace("<img ", '<img class="only-light" ', 1)
        size = re.search(r'\sstyle="[^"]*"', match["img"])            # the 2x PNGs are shown at their CSS size
        pair = (f'<span class="stagewise-figure-pair">{light}'
                + (f'<img class="only-dark" alt="{alt}" src="{prefix}{names["dark"]}"{size.group(0) if size else ""} />'
                   if "dark" in names else "")
                + "</span>")
        url = f"{base_url.rstrip('/')}/{page_url}#{figure.anchor}"
        return (match.group(1) + pair + match["mid"] + _menu(figure, names, prefix, number, url, version)
                + match.group(5))

    patched = _FIGURE.sub(replace, text)
    if count:
        write_text_atomic(page, patched)
    return count


_CARD = re.compile(r'(<div class="sd-card [^"]*stagewise-gallery-card[^"]*">\s*)(<img\b[^>]*>)(.*?href="[^"#]*#'
                   r'(?P<anchor>fig-[^"]+)")', re.S)


def patch_gallery(page: Path, figures: dict[str, BookFigure], html_dir: Path) -> int:
    """Give each gallery thumbnail its dark rendering (shown in the dark theme, as under the figure itself)."""
    if not page.is_file():
        return 0
    text = page.read_text(encoding="utf-8")
    if "only-dark" in text:
        return 0
    count = 0

    def replace(match: re.Match) -> str:
        nonlocal count
        figure = figures.get(match["anchor"])
        dark = html_dir / "figures" / figure.chapter / f"{figure.stem}.dark.png" if figure else None
        if dark is None or not dark.is_file():
            return match.group(0)
        count += 1
        src = os.path.relpath(dark, page.parent).replace(os.sep, "/")
        light = match.group(2).replace('class="', 'class="only-light ', 1)
        return (match.group(1) + '<span class="stagewise-figure-pair">' + light
                + f'<img class="sd-card-img-top only-dark" alt="{html.escape(figure.alt, quote=True)}" src="{src}" />'
                + "</span>" + match.group(3))

    patched = _CARD.sub(replace, text)
    if count:
        write_text_atomic(page, patched)
    return count



def publish(html_dir: Path, executed: Path, pages: dict[str, Path | list[Path]], base_url: str, version: str,
            gallery: Path | None = None) -> int:
    """Downloads and menus for every figure with a sidecar; ``pages`` maps each chapter to its HTML file or files
    (story and verification page: a figure gets its menu on the page that shows it); ``gallery``: the gallery page,
    whose thumbnails get their dark renderings."""
    html_dir = Path(html_dir)
    total = 0
    everything: dict[str, BookFigure] = {}
    for chapter, chapter_pages in pages.items():
        figures = {f.anchor: f for f in book_figures(executed, [chapter])}
        chapter_pages = [p for p in ([chapter_pages] if isinstance(chapter_pages, Path) else chapter_pages)
                         if p.is_file()]
        if not figures or not chapter_pages:
            continue
        everything.update(figures)
        target = html_dir / "figures" / chapter
        files = {anchor: export_files(f, target) for anchor, f in figures.items()}
        for page in chapter_pages:
            prefix = os.path.relpath(target, page.parent).replace(os.sep, "/") + "/"
            total += patch_page(page, figures, files, prefix, base_url,
                                page.relative_to(html_dir).as_posix(), version)
    if gallery is not None:
        patch_gallery(gallery, everything, html_dir)
    return total


def _plain(text: str) -> str:
    """Text without TeX: the card's link text is read as is (a screen reader says it; no math is typeset there)."""
    text = re.sub(r"\\[A-Za-z]+", " ", text)                       # TeX commands
    return re.sub(r"\s+", " ", re.sub(r"[$\\{}^_]", "", text)).strip() or "figure"


#: A figure wider than this (width / height) takes the gallery's whole row, so that a strip of panels stays legible.
WIDE_ASPECT = 2.2


def _gallery_columns(png: Path) -> str:
    """The card's columns (of 12) at each screen width: a wide figure the whole row, any other half of it."""
    from PIL import Image
    try:
        with Image.open(png) as image:
            wide = image.width / image.height > WIDE_ASPECT
    except OSError:
        wide = False
    return "12" if wide else "12 6 6 6"


def gallery_page(executed: Path, chapters: list[tuple[str, str]], label: str = "figure-gallery",
                 image_prefix: str = ".") -> str:
    """The Markdown of the gallery: per chapter (name, title), a grid of cards, each a thumbnail with its
    caption linking to the figure in its chapter. ``image_prefix``: the executed folder seen from the page."""
    lines = [f"({label})=", "# Figure gallery", "",
             "Every figure of the book, as drawn by the last build. Each links to its place in its chapter, where a "
             "menu under the figure offers the PDF, SVG and PNG, 16:9 renderings for talks (light and dark), the "
             "plotted data as CSV, a BibTeX entry for the figure and the `stagewise figure` command that draws it "
             "again in another style without rerunning the chapter.", ""]
    for chapter, title in chapters:
        figures = book_figures(executed, [chapter])
        if not figures:
            continue
        lines += [f"## {title}", "", "::::{grid} 1 2 2 2", ":gutter: 2", ""]
        for f in figures:
            lines += [f":::{{grid-item-card}}", f":columns: {_gallery_columns(executed / chapter / 'figures' / f'{f.stem}.png')}",
                      f":img-top: {image_prefix}/{chapter}/figures/{f.stem}.png",
                      f":img-alt: {f.alt}", f":link: {f.anchor}", ":link-type: ref",
                      f":link-alt: {_plain(f.caption)}",
                      f":class-card: stagewise-gallery-card", "",
                      f"{{numref}}`{f.anchor}`: {f.caption}", ":::", ""]
        lines += ["::::", ""]
    return "\n".join(lines)
