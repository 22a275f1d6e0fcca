"""The bibliography's labels (stagewise.sphinx.bibstyle): author-year as the text cites, accents decoded."""
import re

from pybtex.database import parse_string

from stagewise.sphinx.bibstyle import AuthorYearLabelStyle, author_year

BIB = r"""
@misc{a, author = {Boix-Adser{\`a}, Enric and Littwin, Etai and Abbe, Emmanuel}, year = {2023}, title = {A}}
@misc{b, author = {Boix-Adser{\`a}, Enric and Littwin, Etai and Bengio, Samy}, year = {2023}, title = {B}}
@misc{c, author = {Pesme, Scott and Flammarion, Nicolas}, year = {2023}, title = {C}}
@misc{d, author = {{\c{S}}im{\c{s}}ek, Berfin}, year = {2021}, title = {D}}
"""


def test_labels_are_author_year_with_accents_and_a_b_for_twins():
    entries = list(parse_string(BIB, "bibtex").entries.values())
    assert author_year(entries[2]) == "Pesme & Flammarion 2023" and author_year(entries[3]) == "Şimşek 2021"
    labels = list(AuthorYearLabelStyle().format_labels(entries))
    assert labels == ["Boix-Adserà et al. 2023a", "Boix-Adserà et al. 2023b", "Pesme & Flammarion 2023",
                      "Şimşek 2021"]
    assert not any("+" in label or "{" in label for label in labels)      # control: no alpha-style label left


def _book_entries():
    from pathlib import Path

    import yaml
    from conftest import ROOT
    files = yaml.safe_load((ROOT / "_config.yml").read_text())["bibtex_bibfiles"]
    return {key: entry for f in files for key, entry in parse_string(Path(ROOT / f).read_text(), "bibtex").entries.items()}


def test_every_cited_work_has_a_link():
    """Every entry of the book's .bib files carries a DOI, an arXiv identifier or a URL (the style turns each into a
    link); the arXiv twin of an entry that has one is exempt. Control: an entry without any is reported."""
    def unlinked(entries):
        return sorted(k for k, e in entries.items() if not {"doi", "eprint", "url"} & {f.lower() for f in e.fields}
                      and not k.endswith("arxiv"))
    entries = _book_entries()
    assert len(entries) >= 30 and unlinked(entries) == []
    assert unlinked(dict(parse_string(BIB, "bibtex").entries)) == ["a", "b", "c", "d"]
    for key, entry in entries.items():
        if "eprint" in entry.fields:
            assert re.fullmatch(r"\d{4}\.\d{4,5}", entry.fields["eprint"]), key
