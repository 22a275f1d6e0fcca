"""Every chapter has the book's one skeleton (README, 'Layout'): one notebook cut into a story page and a
verification page (cells tagged ``verification``, stagewise.core.run.pages). The story: the question, the
signature figure, the goals, a collapsed parameters cell, a notation table of symbols, statement boxes that end
with their verdict, at least three short visible code cells, the box "Does the theory hold here?", a summary,
answered exercises, further reading. The verification cells: every check, the notation of code names. The landing
page names the chapters as the sidebar does."""
import re

import pytest

from stagewise.core.run import pages
from stagewise.core.run.registry import PROJECT_ROOT, all_chapters
from stagewise.core.run.session import statement_labels
from stagewise.core.book.shape import LIMITS

CHAPTERS = all_chapters()


def _story(nb) -> list:
    return [c for c in nb.cells if not pages.is_verification(c)]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_chapter_follows_the_skeleton(chapter):
    nb = chapter.notebook()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert {"parameters", "hide-cell"} <= set(code[0].metadata.get("tags", [])), \
        "the parameters cell comes first, collapsed"
    setup = code[1].source
    assert f'stagewise.start("{chapter.name}", globals())' in setup, "the setup cell starts the run"
    assert setup.index("stagewise.start") < min((m.start() for m in re.finditer(r"^from stagewise\.", setup, re.M)),
                                                default=len(setup))
    assert "run.generator(" in setup or "run.numpy_rng(" in setup or "run.stream_seed(" in setup
    everything = "\n".join(c.source for c in code)
    for banned in ("seed_everything", "manual_seed(run.seed", "default_rng(seed", 'P["', "run.parameters["):
        assert banned not in everything, banned
    assert not re.search(r"^\s*(from stagewise[\w.]* )?import [\w, ]*\bas [A-Z]\b", everything, re.M), \
        "single-capital aliases collide with the mathematics"
    story = _story(nb)
    story_code = [c for c in story if c.cell_type == "code"]
    for c in story_code:
        assert not re.search(r"\brun\.(check\w*|not_run|empirical|hypothesis)\(", c.source), \
            "every check sits on the verification page (a cell tagged verification)"
    assert "run.finish()" in story_code[-1].source, "run.finish() ends the story (it glues the verdicts)"
    visible = [c for c in story_code if not {"hide-input", "hide-cell", "remove-input", "remove-cell",
                                             "parameters"} & set(c.metadata.get("tags", []))]
    short = [c for c in visible if len(c.source.strip().splitlines()) <= LIMITS["code_lines"]]
    assert len(short) >= LIMITS["visible_code_cells"], "at least three short visible cells show the experiment"
    longest = max(len(c.source.splitlines()) for c in story_code[1:])
    assert longest <= 30, f"a code cell of {longest} lines on the story page"
    audit = [len(c.source.splitlines()) for c in code if pages.is_verification(c)]
    assert max(audit, default=0) <= 60, f"a code cell of {max(audit)} lines on the verification page"
    text = "\n".join(c.source for c in story if c.cell_type == "markdown")
    checks = "\n".join(c.source for c in nb.cells if pages.is_verification(c) and c.cell_type == "markdown")
    assert re.search(r"^\|\s*symbol\s*\|\s*meaning", text, re.M | re.I), "a notation table of symbols"
    assert re.search(r"^\|\s*symbol\s*\|\s*code", checks, re.M | re.I), "the code names on the verification page"
    assert re.search(r":class: goals", text) and re.search(r":class: verdict", text)
    assert re.search(r"\{glue:md\}`verdict-summary(:myst)?`", text), "the box 'Does the theory hold here?'"
    headings = re.findall(r"^## (.+)$", text, re.M)
    for needed in ("Summary", "Exercises", "Further reading"):
        assert needed in headings, f"no '## {needed}'"
    assert len(re.findall(r":class: exercise", text)) >= LIMITS["exercises"]
    labels = statement_labels(chapter.name)
    used = [u for u in re.findall(r"\{glue:md\}`verdict-([\w-]+?)(?::myst)?`", text) if u != "summary"]
    assert used, "statement boxes end with their verdict line"
    assert not set(used) - set(labels), f"verdict lines of labels that do not exist: {set(used) - set(labels)}"


def test_the_landing_page_names_and_links_every_chapter_as_the_sidebar_does():
    """Each chapter has a card on the landing page, with its title exactly as the chapter's heading (the
    sidebar's and the PDF outline's), a link, a thumbnail and a one-sentence finding; and the page opens with
    a figure."""
    intro = (PROJECT_ROOT / "book" / "intro.md").read_text()
    cards = re.findall(r":::\{grid-item-card\} (.+)\n:link: /chapters/([\w-]+)\n:link-type: doc\n:img-top: (\S+)", intro)
    assert [(title, name) for title, name, _ in cards] == [(c.title, c.name) for c in CHAPTERS]
    for _, name, image in cards:
        assert image.startswith(f"executed/{name}/figures/{name}-") and image.endswith(".png")
    assert intro.index("```{figure}") < intro.index("## The chapters")
    for section in ("## Three ways to read", "## What \"checked\" means", "## Cite"):
        assert section in intro


def parameter_names_in_captions(source: str, names: list[str]) -> list[str]:
    """The parameter names a figure caption of a chapter's source shows as code (``eta_white``) instead of the
    value of the run it belongs to."""
    figures = re.findall(r"```\{(?:glue:)?figure\}.*?\n```", source, re.S)
    return [n for fig in figures for n in names if f"`{n}`" in fig]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_captions_show_values_not_parameter_names(chapter):
    """A caption gives the run's values (glued), never a parameter's name; control: a caption naming one is found."""
    names = list(chapter.parameters)
    assert parameter_names_in_captions(chapter.source.read_text(), names) == []
    planted = f"```{{glue:figure}} fig-x\n:name: x\n\nGD at `{names[0]}` (dots).\n```"
    assert parameter_names_in_captions(planted, names) == [names[0]]


#: The book style's colours (Okabe-Ito, src/stagewise/core/figures/styles/book.mplstyle) and the words a caption may
#: use for each; "red" names none of them (the nearest is vermilion).
PALETTE_WORDS = {"blue": "0072B2", "orange": "E69F00", "green": "009E73", "bluish green": "009E73",
                 "vermilion": "D55E00", "reddish purple": "CC79A7", "pink": "CC79A7", "sky blue": "56B4E9",
                 "light blue": "56B4E9", "yellow": "F0E442", "grey": "999999", "gray": "999999", "black": "ink"}
COLOUR_WORD = re.compile(r"\b(?:(?:bluish|reddish|sky|light|dark)\s+)?(?:red|blue|green|orange|black|gr[ae]y|purple"
                         r"|pink|yellow|vermilion|brown|cyan|magenta|violet)\b", re.I)


def caption_colour_words(source: str) -> list[str]:
    """The colour words of the figure captions and alt texts of a chapter source that name no colour of the
    palette."""
    captions = re.findall(r"```\{(?:glue:)?figure\}.*?\n```", source, re.S)
    captions += re.findall(r"""(?:caption|alt)=\s*((?:"[^"]*"\s*)+)""", source)
    return [w for c in captions for w in (m.group(0).lower() for m in COLOUR_WORD.finditer(c))
            if " ".join(w.split()) not in PALETTE_WORDS]


def test_palette_words_are_the_book_style_colours():
    sheet = (PROJECT_ROOT / "src" / "stagewise" / "core" / "figures" / "styles" / "book.mplstyle").read_text().upper()
    assert all(hexa == "ink" or hexa in sheet for hexa in PALETTE_WORDS.values())


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_caption_colour_words_name_the_palette(chapter):
    """A caption's colour words are the palette's names (a vermilion line is not "red"); control: "red" is found."""
    assert caption_colour_words(chapter.source.read_text()) == []
    assert caption_colour_words("```{glue:figure} fig-x\n:name: x\n\nat initialization (red)\n```") == ["red"]
