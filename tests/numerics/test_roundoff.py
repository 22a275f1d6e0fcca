"""Zero tests that do not depend on the machine (stagewise.numerics.roundoff), and a scan of the code for
exact comparisons of a computed float with a float zero."""
import io
import tokenize
from pathlib import Path

import numpy as np
import pytest

from stagewise.numerics import roundoff

ROOT = Path(__file__).resolve().parents[2]


def _rank_deficient(seed: int, n: int = 8, d: int = 12, rank: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, rank)) @ rng.standard_normal((rank, d))


@pytest.mark.parametrize("seed", range(4))
def test_rank_and_zero_tests_ignore_rounding_level_perturbations(seed):
    """What one BLAS kernel computes as 0 another computes as 5e-17: every decision must agree on both.
    Rank-deficient and nearly singular inputs, perturbed at 1e-15 relative in 20 ways."""
    X = _rank_deficient(seed)
    scale = np.linalg.norm(X, 2)
    rng = np.random.default_rng(100 + seed)
    ranks, zeros, positives = set(), set(), set()
    for _ in range(20):
        Xp = X * (1 + 1e-15 * rng.standard_normal(X.shape))
        s = np.linalg.svd(Xp, compute_uv=False)
        ranks.add(roundoff.numerical_rank(s, max(X.shape)))
        smallest = s[-1]                                   # exactly 0 in exact arithmetic, ~1e-15 here
        zeros.add(roundoff.is_zero(smallest, scale, max(X.shape)))
        positives.add(roundoff.is_positive(smallest, scale, max(X.shape)))
    assert ranks == {5} and zeros == {True} and positives == {False}
    # control: the exact tests this module replaces give different answers on the same inputs
    exact = {bool(np.linalg.svd(X * (1 + 1e-15 * rng.standard_normal(X.shape)), compute_uv=False)[-1] > 0)
             for _ in range(20)}
    assert exact == {True}                                # 'positive' for a rank-deficient matrix: wrong
    assert np.linalg.matrix_rank(X) == 5 and roundoff.numerical_rank(np.zeros(3), 3) == 0


def test_a_small_but_real_quantity_is_not_rounding():
    """The tolerance scales with the data: 1e-10 of a unit-size quantity is real; 1e-10 of 1e8 is rounding."""
    assert roundoff.is_positive(1e-10, 1.0, 100) and not roundoff.is_zero(1e-10, 1.0, 100)
    assert roundoff.is_zero(1e-10, 1e8, 100)
    assert roundoff.is_zero(-3e-17, 1.0) and not roundoff.is_positive(3e-17, 1.0)


# -- the scan --------------------------------------------------------------------------------------
# A comparison of a computed quantity with the float literal 0.0 (==, !=, <, >, <=, >=) is a decision that a
# BLAS kernel can flip. Each is either rewritten with stagewise.numerics.roundoff or carries a comment
# `# exact: <why>` on its line: a division guard, a ReLU's definition, a sign of a value that is exactly
# representable (a count, a user's parameter), never a decision about a computed float's vanishing.
COMPARISONS = {"==", "!=", "<=", ">=", "<", ">"}


def _float_zero_comparisons(source: str) -> list[int]:
    """Line numbers where a comparison operator meets the literal 0.0 (strings and comments ignored)."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
              if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)]
    lines = []
    for a, b in zip(tokens, tokens[1:]):
        pair = {(a.type, a.string), (b.type, b.string)}
        if any(t == tokenize.OP and x in COMPARISONS for t, x in pair) and any(
                t == tokenize.NUMBER and float(x) == 0.0 and "." in x for t, x in pair):   # exact: a literal
            lines.append(a.start[0])
    return lines


def _code_cells(markdown: str) -> str:
    """A MyST notebook's code cells, other lines blanked (line numbers kept)."""
    out, inside = [], False
    for line in markdown.splitlines():
        if line.startswith("```{code-cell}"):
            inside = True
            out.append("")
            continue
        if inside and line.startswith("```"):
            inside = False
        out.append(line if inside and not line.startswith(":") else "")
    return "\n".join(out) + "\n"


def _sources():
    for path in sorted((ROOT / "src" / "stagewise").rglob("*.py")):
        yield path.relative_to(ROOT), path.read_text()
    for path in sorted((ROOT / "book" / "chapters").glob("*.md")):
        yield path.relative_to(ROOT), _code_cells(path.read_text())


def test_no_unexplained_comparison_with_a_float_zero():
    found = []
    for path, source in _sources():
        lines = source.splitlines()
        for number in _float_zero_comparisons(source):
            if "# exact:" not in lines[number - 1]:
                found.append(f"{path}:{number}: {lines[number - 1].strip()}")
    assert not found, "compare with stagewise.numerics.roundoff, or say `# exact: why`:\n" + "\n".join(found)


def test_the_scan_sees_the_patterns():  # control of the scan
    assert _float_zero_comparisons("if rate > 0.0:\n    pass\n") == [1]
    assert _float_zero_comparisons("x = 1\nok = 0.0 == x\n") == [2]
    assert _float_zero_comparisons("x = 0.05 > y\neta = 10.0\ns = '> 0.0'  # > 0.0\nn = k > 0\n") == []
    cells = _code_cells("text > 0.0\n```{code-cell} ipython3\n:tags: [x]\nok = a != 0.0\n```\n")
    assert _float_zero_comparisons(cells) == [4]


def test_a_dead_layer_has_no_nontop_fraction_on_any_machine():
    """rho_nt of a matrix that is zero up to rounding: 0 whatever the rounding noise, given the live scale;
    control: without the scale the noise's own ratio comes out (anything in [0, 1))."""
    import torch

    from stagewise.numerics.spectra import nontop_fraction
    noise = 1e-17 * torch.randn(6, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert nontop_fraction(noise, scale=1.0) == 0.0 and nontop_fraction(torch.zeros(6, 5), scale=1.0) == 0.0
    assert nontop_fraction(noise) > 0.1
    live = torch.outer(torch.arange(1.0, 7.0, dtype=torch.float64), torch.ones(5, dtype=torch.float64))
    assert abs(nontop_fraction(live + noise, scale=1.0)) < 1e-12       # rank one: 0 with or without noise
