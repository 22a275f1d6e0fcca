"""The bibliography's labels in the author-year form the text cites with (``{cite:t}`` gives "Du et al. (2018)").

Pybtex's default ``alpha`` labels are made from the first letters of the authors' names, which accents turn into
``[BAdseraLA+23a]`` and which match nothing in the text. This extension registers a label style, ``authoryear``
("Du et al. 2018", "Pesme & Flammarion 2023", with a, b for two works of the same authors and year), and a
formatting style, ``stagewise`` (pybtex's ``unsrt`` with those labels, sorted by author and year), that
``_config.yml`` selects with ``bibtex_default_style``.
"""
from __future__ import annotations

from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle

LABEL_STYLE, FORMAT_STYLE = "authoryear", "stagewise"


def _surname(person) -> str:
    parts = person.prelast_names + person.last_names
    return " ".join(parts) if parts else "Anonymous"


def author_year(entry) -> str:
    """"Du et al. 2018", "Pesme & Flammarion 2023", "Saxe 2014" from an entry's authors (or editors) and year."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_plain(_surname(p)) for p in people]
    if not names:
        who = "Anonymous"
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} & {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who} {entry.fields.get('year', 'n.d.')}"


def _plain(name: str) -> str:
    """LaTeX accents of a .bib name as Unicode (``Boix-Adser{\\`a}`` -> ``Boix-Adserà``)."""
    import codecs
    import latexcodec  # noqa: F401 - registers the codec (a dependency of pybtex)
    return codecs.decode(name, "ulatex").replace("{", "").replace("}", "").strip()


class AuthorYearLabelStyle(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        labels = [author_year(entry) for entry in sorted_entries]
        count, seen = Counter(labels), Counter()
        for label in labels:
            if count[label] == 1:
                yield label
            else:
                yield label + chr(ord("a") + seen[label])
                seen.update([label])


class AuthorYearStyle(UnsrtStyle):
    default_label_style = LABEL_STYLE
    default_sorting_style = "author_year_title"


def setup(app):
    register_plugin("pybtex.style.labels", LABEL_STYLE, AuthorYearLabelStyle)
    register_plugin("pybtex.style.formatting", FORMAT_STYLE, AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
