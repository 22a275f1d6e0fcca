"""Row names typeset as the rest of the page: the ASCII formulas of the runs' row names, shown as math.

A run names its rows in plain ASCII, since ``results.json`` is read by programs and terminals (``eta^2 Q(grad)``,
``sigma_i(W1)``, ``||beta(T) - X^+ Y||_F``). The book shows those formulas as math. :data:`FORMULAS` maps each
ASCII formula to what the page shows: text with ``$...$`` math. :func:`pieces` cuts a text into text and math,
:func:`parts` also cuts out the code names (``eta_white``, ``head_matrices``: a lowercase identifier with an underscore,
which the page shows in code type), :func:`html` writes it for a raw HTML table, and :func:`ascii_math` finds what
still reads as ASCII math.

The Sphinx extension :mod:`stagewise.sphinx.typeset` applies the table to the text of every page. The page test
(``tests/core/test_pages.py``) fails on a row name with ASCII math left on a verification page, so a new row name
with a formula needs its entry here.
"""
from __future__ import annotations

import html as _html
import re

#: ASCII formula -> what the page shows (text, with math between dollars). The longest match wins. A formula the
#: symbol rules below (:data:`_ATOM`) typeset as well, symbol by symbol, has no entry.
FORMULAS: dict[str, str] = {
    # hypotheses of the runs (their lines on the verification pages)
    "C_1 > 0": r"$C_1 > 0$",
    "t=5 -> 30": r"$t = 5 \to 30$",
    "sigma2/sigma1": r"$\sigma_2/\sigma_1$",
    "sigma3/sigma1": r"$\sigma_3/\sigma_1$",
    "ex1_widths": r"$\texttt{ex1\_widths}$",
    "alpha < alpha_0(t)": r"$\alpha < \alpha_0(t)$",
    "1/ln(1/gamma)": r"$1/\ln(1/\gamma)$",
    "(eta^2 delta^2 / 2)": r"$(\eta^2 \delta^2 / 2)$",
    "rank >= 2": r"rank $\ge 2$",
    "2 d_h < d_emb": r"$2 d_h < d_{\text{emb}}$",
    "d_emb": r"$d_{\text{emb}}$",
    # conservation-laws
    "~ eta^1": r"$\sim \eta^1$",
    "deep_relu": "deep ReLU",
    "Q(grad L)": r"$Q(\nabla L)$",
    "eta^2 Q(grad)": r"$\eta^2 Q(\nabla L)$",
    "u^2 - v^2": r"$u^2 - v^2$",
    "u^2 + v^2": r"$u^2 + v^2$",
    "prod(1 - eta^2 g^2)": r"$\prod (1 - \eta^2 g^2)$",
    "|a_j(0)| >= ||w_j(0)||": r"$|a_j(0)| \ge \|w_j(0)\|$",
    "Z1^T Z1 - Z2 Z2^T = 2 gamma I_d": r"$Z_1^\top Z_1 - Z_2 Z_2^\top = 2\gamma I_d$",
    "eta -> 0": r"$\eta \to 0$",
    "O(eta)": r"$O(\eta)$",
    "eta -> eta/2": r"$\eta \to \eta/2$",
    "~ 1/ln(1/gamma)": r"$\sim 1/\ln(1/\gamma)$",
    "|D_eta1 - D_flow|": r"$|D_{\eta_1} - D_{\text{flow}}|$",
    # diagonal-incremental
    "g_KQ": r"$g_{KQ}$",
    "c_n = c_0 prod(1 - eta^2 g^2)": r"$c_n = c_0 \prod (1 - \eta^2 g^2)$",
    # escape-speed
    "σ_max(G Xᵀ)": r"$\sigma_{\max}(G X^\top)$",
    "max ρ_nt(W_ℓ), ℓ ≥ 2": r"$\max_{\ell \ge 2} \rho_{\mathrm{nt}}(W_\ell)$",
    "ŝ never exceeds |G|_F |X|_F": r"$\hat s$ never exceeds $\|G\|_F \|X\|_F$",
    "ŝ inside the bracket ‖Gv‖‖u‖ ∓ ‖G‖_F ε (|ŝ − ‖Gv‖‖u‖| / ‖G‖_F ε)":
        r"$\hat s$ inside the bracket $\|Gv\|\|u\| \mp \|G\|_F\,\varepsilon$ "
        r"($|\hat s - \|Gv\|\|u\|| / \|G\|_F\,\varepsilon$)",
    "max ρ_nt(W_ℓ), ρ_nt(Z^σ_ℓ), ν_ℓ": r"$\max \rho_{\mathrm{nt}}(W_\ell), \rho_{\mathrm{nt}}(Z^\sigma_\ell), \nu_\ell$",
    "max ρ_nt(Z^σ_ℓ), ν_ℓ, ℓ ≥ 3": r"$\max_{\ell \ge 3} \rho_{\mathrm{nt}}(Z^\sigma_\ell), \nu_\ell$",
    "GF on L0": r"GF on $L_0$",
    "u' = s u^(L−1)": r"$u' = s\, u^{L-1}$",
    # linear-riccati
    "at eta/2 / (2 e_1 + floor)": r"at $\eta/2$ / $(2 e_1 + \text{floor})$",
    "at eta/2": r"at $\eta/2$",
    "|sigma_i - formula_i|": r"$|\sigma_i - \text{formula}_i|$",
    "sigma(W1) = (gamma + sqrt(gamma^2 + sigma_b^2))^{1/2}":
        r"$\sigma(W_1) = (\gamma + \sqrt{\gamma^2 + \sigma_b^2})^{1/2}$",
    "sigma_i(W1)": r"$\sigma_i(W_1)$",
    "sigma(W1)": r"$\sigma(W_1)$",
    "sqrt(2 gamma)": r"$\sqrt{2\gamma}$",
    "(eta s (1 + s t))": r"$(\eta s (1 + s t))$",
    "(eta sigma_max sqrt(sigma_max^2 + gamma^2) (1 + ln+ 1/gamma))":
        r"$(\eta\, \sigma_{\max} \sqrt{\sigma_{\max}^2 + \gamma^2}\, (1 + \ln_+ 1/\gamma))$",
    "W1 W1^T = gamma I + sqrt(gamma^2 I + beta beta^T)": r"$W_1 W_1^\top = \gamma I + \sqrt{\gamma^2 I + \beta \beta^\top}$",
    "loss / (D_psi / (sqrt(2 gamma) t))": r"loss / $(D_\psi / (\sqrt{2\gamma}\, t))$",
    "max over t": r"max over $t$",
    "(eta^2 lambda_max (1 + ln+ 1/gamma_min))": r"$(\eta^2 \lambda_{\max} (1 + \ln_+ 1/\gamma_{\min}))$",
    "- V* >= 0": r"$- V^* \ge 0$",
    "(objective - V*) / (||D||_F^2 / (8 gamma))": r"(objective $- V^*$) / $(\|D\|_F^2 / (8\gamma))$",
    "||beta(T) - X^+ Y||_F": r"$\|\beta(T) - X^+ Y\|_F$",
    "all gammas": r"all $\gamma$",
    "d/dt asinh(sigma/gamma)/2 = u^T R v": r"$\frac{d}{dt} \frac{1}{2} \operatorname{asinh}(\sigma/\gamma) = u^\top R v$",
    "k=1": r"$k = 1$",
    "U^T beta V": r"$U^\top \beta V$",
    "gamma >= 1e-4": r"$\gamma \ge 10^{-4}$",
    "loss / (L(0) exp(-4 gamma lambda_min t))": r"loss / $(L(0)\, e^{-4 \gamma \lambda_{\min} t})$",
    "t_1/2 - ln(2 sigma/gamma)/(2 sigma) = -gamma/(2 sigma^2) + O(gamma^2 ln)":
        r"$t_{1/2} - \ln(2\sigma/\gamma)/(2\sigma) = -\gamma/(2\sigma^2) + O(\gamma^2 \ln)$",
    "2 gamma prod(1 - eta^2 r^2)": r"$2\gamma \prod (1 - \eta^2 r^2)$",
    "eps * steps * sigma_max": r"$\varepsilon \cdot \text{steps} \cdot \sigma_{\max}$",
    # relu-orthogonal
    "x log(1/lambda)": r"$\times \log(1/\lambda)$",
    "lam^min tau": r"$\lambda^{\min \tau}$",
    "M_ij = 1{<w_j(0), x_i> > 0}": r"$M_{ij} = \mathbb{1}\{\langle w_j(0), x_i \rangle > 0\}$",
    "L^(K)": r"$L^{(K)}$",
    "lambda^4 over lambda": r"$\lambda^4$ over $\lambda$",
    "||theta||^2/(||y||_inf sqrt n) in ln n (n in [2^12, 2^14])":
        r"$\|\theta\|^2/(\|y\|_\infty \sqrt{n})$ in $\ln n$ ($n \in [2^{12}, 2^{14}]$)",
    "norm >= minimal": r"norm $\ge$ minimal",
    "m>=1024": r"$m \ge 1024$",
    "(m+1)/3": r"$(m+1)/3$",
    "1/sqrt(fan_in)": r"$1/\sqrt{\text{fan\_in}}$",
    "sqrt(1/fan_in)": r"$\sqrt{1/\text{fan\_in}}$",
    "1/fan_in": r"$1/\text{fan\_in}$",
    # transformer-rank
    "alpha^2 b^2 / 3": r"$\alpha^2 b^2 / 3$",
    "W_K W_Q^T": r"$W_K W_Q^\top$",
    "Delta KQ": r"$\Delta(W_K W_Q^\top)$",
    "Delta VO": r"$\Delta(W_V W_O^\top)$",
    "Delta QK": r"$\Delta(W_Q W_K^\top)$",
    "KQ init": r"$W_K W_Q^\top$ at init",
    "p_max + sqrt(ln(1/delta)/2n)": r"$p_{\max} + \sqrt{\ln(1/\delta)/2n}$",
    "W_V W_O^T": r"$W_V W_O^\top$",
    "(eta s_{T-1} B_T + float32 rounding)": r"$(\eta\, s_{T-1} B_T +$ float32 rounding)",
    "max |W(T) - W(T-1)|": r"$\max |W(T) - W(T-1)|$",
}

_WORD = re.compile(r"\w")


def _pattern() -> re.Pattern:
    """One alternation of every formula, longest first; a formula that starts (ends) with a letter or digit
    matches only where a word starts (ends)."""
    parts = []
    for key in sorted(FORMULAS, key=len, reverse=True):
        before = r"(?<!\w)" if _WORD.match(key[0]) else ""
        after = r"(?!\w)" if _WORD.match(key[-1]) else ""
        parts.append(before + re.escape(key) + after)
    return re.compile("|".join(parts))


_FORMULA = _pattern()


#: The Greek letters a run spells out, and the words of a subscript that are operators.
GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "eta", "theta", "lambda", "mu", "nu", "rho", "sigma", "tau",
         "psi")
_SUB = rf"(?:_(max|min|{'|'.join(GREEK)}|\{{[^}}]+\}}|[A-Za-z0-9*]))?"
#: One symbol outside the table: a spelt-out Greek letter or a single letter (or a letter and a digit, ``Z1``), with
#: a subscript (one character, a
#: Greek letter, ``max``/``min`` or braced) and a numeric or one-letter power; max, min, sum or prod with a
#: one-letter subscript; a norm ``||...||``; ``sqrt(...)``; a power of a number (``2^12``); or an ASCII arrow or inequality between spaces. A longer
#: identifier (``eta_white``, ``x86_64``) is code, not a symbol, and is left alone.
_ATOM = re.compile(rf"(?<![\w\\])(?:({'|'.join(GREEK)})|([A-Za-z]\d?)(?=[_^])){_SUB}(?:\^(\d+|[A-Za-z]))?(?![\w])"
                   r"|(?<= )(->|<=|>=)(?= )"
                   r"|(?<![\w\\])(max|min|sum|prod)_([A-Za-z])(?![\w])"
                   r"|\|\|([^|]{1,40}?)\|\|(_F|_\w)?(\^\d)?"
                   r"|(?<![\w\\])sqrt\(([^()]{1,30})\)"
                   r"|(?<![\w.])(\d+)\^(-?\d+|-?[A-Za-z])(?![\w])"
                   r"|(?<![\\])(log|ln|exp)?\(([^()]{1,40})\)\^(\d+|-?[A-Za-z]|\{[^{}]{1,10}\})(?![\w])"
                   r"|(?<![\w])([\u03b1-\u03c9\u0391-\u03a9])\^(\d+|[A-Za-z])(?![\w])")
_OPERATOR = {"->": r"\to", "<=": r"\le", ">=": r"\ge"}


def _tex(text: str) -> str:
    """Plain text read as the inside of a formula: its symbols typeset, the rest as it is."""
    return "".join(s for _, s in _symbols(text))


def _atom(match: re.Match) -> str:
    (greek, letter, sub, power, operator, big, index, norm, norm_sub, norm_power, root, base, exponent,
     function, inner, inner_power, letter_u, power_u) = match.groups()
    if base is not None:
        return f"{base}^{{{exponent}}}"
    if inner is not None:
        head = f"\\{function}" if function else ""
        return f"{head}({_tex(inner)})^{{{inner_power.strip('{}')}}}"
    if letter_u is not None:
        return f"{letter_u}^{{{power_u}}}"
    if operator:
        return _OPERATOR[operator]
    if big:
        return f"\\{big}_{index}"
    if norm is not None:
        return f"\\|{_tex(norm)}\\|" + (norm_sub or "") + (norm_power or "")
    if root is not None:
        return f"\\sqrt{{{_tex(root)}}}"
    tex = f"\\{greek}" if greek else letter if len(letter) == 1 else f"{{{letter[0]}_{letter[1]}}}"   # Z1 is Z_1
    if sub in ("max", "min"):
        tex += f"_{{\\{sub}}}"
    elif sub in GREEK:
        tex += f"_\\{sub}"
    elif sub and sub.startswith("{"):
        tex += "_{" + _tex(sub[1:-1]) + "}"
    elif sub:
        tex += "_" + sub
    return tex + ("^\\top" if power == "T" else f"^{{{power}}}" if power else "")


def _symbols(text: str) -> list[tuple[bool, str]]:
    """The symbols of plain text (:data:`_ATOM`) as math, the rest as text."""
    out: list[tuple[bool, str]] = []
    at = 0
    for match in _ATOM.finditer(text):
        out += [(False, text[at:match.start()])] if match.start() > at else []
        out.append((True, _atom(match)))
        at = match.end()
    return out + ([(False, text[at:])] if at < len(text) else [])


def _merged(parts: list[tuple[bool, str]]) -> list[tuple[bool, str]]:
    """Neighbouring math pieces with only spaces between them, as one formula."""
    out: list[tuple[bool, str]] = []
    for math, s in parts:
        if math and len(out) >= 2 and out[-2][0] and not out[-1][0] and not out[-1][1].strip():
            out[-2:] = [(True, out[-2][1] + " " + s)]
        elif math and out and out[-1][0]:
            out[-1] = (True, out[-1][1] + " " + s)
        else:
            out.append((math, s))
    return out


def pieces(text: str) -> list[tuple[bool, str]]:
    """``text`` as (is_math, string) pieces: each formula of :data:`FORMULAS` replaced by what the page shows, and
    the symbols of the rest (:data:`_ATOM`) typeset."""
    out: list[tuple[bool, str]] = []
    at = 0
    for match in _FORMULA.finditer(text):
        if match.start() > at:
            out += _symbols(text[at:match.start()])
        for i, part in enumerate(FORMULAS[match.group(0)].split("$")):
            if part:
                out.append((i % 2 == 1, part))
        at = match.end()
    if at < len(text):
        out += _symbols(text[at:])
    return _merged(out)


#: A code name in plain text: a lowercase identifier with an underscore (``eta_white``, ``head_matrices``,
#: ``x86_64``), not inside a path, a file name or a longer word. What :func:`pieces` typesets as math comes first.
CODE_NAME = re.compile(r"(?<![\w.\\/-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/])")


def parts(text: str) -> list[tuple[str, str]]:
    """``text`` as (kind, string) pieces, kind ``"math"`` (:func:`pieces`), ``"code"`` (:data:`CODE_NAME`, shown in
    code type) or ``"text"``."""
    out: list[tuple[str, str]] = []
    for math, s in pieces(text):
        if math:
            out.append(("math", s))
            continue
        at = 0
        for match in CODE_NAME.finditer(s):
            out += [("text", s[at:match.start()])] if match.start() > at else []
            out.append(("code", match.group(0)))
            at = match.end()
        out += [("text", s[at:])] if at < len(s) else []
    return out


def html(text: str) -> str:
    """``text`` for raw HTML: escaped, its formulas as Sphinx writes inline math (MathJax typesets it), its code names
    as Sphinx writes inline code."""
    return "".join(f'<span class="math notranslate nohighlight">\\({_html.escape(s)}\\)</span>' if kind == "math"
                   else f'<code class="docutils literal notranslate"><span class="pre">{_html.escape(s)}</span></code>'
                   if kind == "code" else _html.escape(s) for kind, s in parts(text))


#: What reads as ASCII math in running text: a subscript or superscript written with _ or ^, sqrt( or a ||norm||,
#: a Greek letter spelt out, an ASCII arrow or inequality.
ASCII_MATH = re.compile(r"[A-Za-z][A-Za-z0-9]*_[{A-Za-z0-9*]|[\w)}*+]\^|sqrt\(|\|\||->|<=|>="
                        r"|(?<![A-Za-z])(?:eta|gamma|sigma|beta|theta|lambda|alpha|tau|psi|epsilon|rho|Delta)"
                        r"(?![A-Za-z])")


def ascii_math(text: str) -> list[str]:
    """The ASCII math left in ``text`` once its formulas are typeset and its code names set as code (empty: none)."""
    return [m.group(0) for kind, s in parts(text) if kind == "text" for m in ASCII_MATH.finditer(s)]


def symbols(text: str) -> list[str]:
    """The symbols of ``text`` that :func:`pieces` would typeset (a page shows none of them as plain text)."""
    return [m.group(0) for m in _ATOM.finditer(text)]
