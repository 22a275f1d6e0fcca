"""The bibliography's labels (stagewise.sphinx.bibstyle): author-year as the text cites, accents decoded."""
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
