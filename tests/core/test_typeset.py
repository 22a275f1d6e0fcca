"""The formulas of row and hypothesis names, typeset (stagewise.core.book.typeset): every row name of the stored runs and of the
book's executions reads without ASCII math once typeset; a formula the table does not know is reported (control)."""
import json

import pytest

from conftest import ROOT
from stagewise.core.book import typeset


def _row_names() -> set[str]:
    files = list((ROOT / "book" / "paper-scale").glob("*/results.json"))
    files += list((ROOT / "book" / "executed").glob("*/results.json"))
    runs = [json.loads(f.read_text()) for f in files]
    return {row["name"] for r in runs for row in r["checks"] + r.get("claims", []) + r.get("hypotheses", [])}


def test_every_row_name_reads_as_math():
    names = _row_names()
    assert len(names) > 40                              # the stored runs alone hold that many
    left = {n: typeset.ascii_math(n) for n in names if typeset.ascii_math(n)}
    assert not left, left


@pytest.mark.parametrize("text, formula", [
    ("diagonal drift ~ eta^1 (seed 0)", r"\sim \eta^1"),
    ("Thm 3.1: ||beta(T) - X^+ Y||_F, all gammas and seeds", r"\|\beta(T) - X^+ Y\|_F"),
    ("the bound 1/sqrt(fan_in)", r"1/\sqrt{\text{fan\_in}}"),
])
def test_a_known_formula_becomes_math(text, formula):
    assert (True, formula) in typeset.pieces(text) and not typeset.ascii_math(text)
    assert f'<span class="math notranslate nohighlight">\\({formula}\\)</span>' in typeset.html(text)


def test_unknown_ascii_math_is_reported_and_words_are_left_alone():
    assert typeset.ascii_math("the rate Q_ab at f(g(x))^2") == ["Q_a", ")^"]
    assert typeset.ascii_math("the fit in 1/log(1/x)^2 at eta_rate") == []      # a power and a code name
    assert typeset.pieces("betamax and etac are words; in etas too") == [
        (False, "betamax and etac are words; in etas too")]      # a formula only where a word starts and ends
    assert typeset.html("a < b") == "a &lt; b"


def test_symbols_outside_the_table_are_typeset():
    """Spelt-out Greek letters, one-letter symbols with sub- and superscripts, norms, roots, max/sum with an
    index and ASCII inequalities become one formula when only spaces separate them; code names are left alone."""
    assert typeset.pieces("with eta lambda_max <= 1/2") == [(False, "with "), (True, r"\eta \lambda_{\max} \le"),
                                                          (False, " 1/2")]
    assert typeset.pieces("drift of sum_l ||W_l||_F^2 here") == [(False, "drift of "),
                                                                 (True, r"\sum_l \|W_l\|_F^2"), (False, " here")]
    assert typeset.pieces("W_Q^T and sqrt(L)") == [(True, r"W_Q^\top"), (False, " and "), (True, r"\sqrt{L}")]
    assert typeset.pieces("eta_white on x86_64") == [(False, "eta_white on x86_64")]
    assert typeset.pieces("signs ignored: (1 - 2^-m)^n, 10^-p and λ^L") == [
        (False, "signs ignored: "), (True, "(1 - 2^{-m})^{n}"), (False, ", "), (True, "10^{-p}"), (False, " and "),
        (True, "λ^{L}")]
    assert typeset.pieces("fit in 1/log(1/alpha)^2") == [(False, "fit in 1/"), (True, r"\log(1/\alpha)^{2}")]


def test_code_names_are_set_as_code():
    """A lowercase identifier with an underscore is a code name (a parameter, a function): the page shows it in code
    type, in HTML as Sphinx writes inline code; a path, a file name, a symbol and a plain word are not code names."""
    assert typeset.parts("eta_white = 0.09 (requires head_matrices(x) < 2)") == [
        ("code", "eta_white"), ("text", " = 0.09 (requires "), ("code", "head_matrices"), ("text", "(x) < 2)")]
    for text in ("runs/paper_scale/x", "notes.file_name", "a_j and sigma_max", "word"):
        assert not [s for kind, s in typeset.parts(text) if kind == "code"], text
    assert typeset.html("at pga_eta") == (
        'at <code class="docutils literal notranslate"><span class="pre">pga_eta</span></code>')
