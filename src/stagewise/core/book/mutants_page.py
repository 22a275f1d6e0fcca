"""The mutation tool's sample of a chapter (:mod:`stagewise.core.sweep.mutants`) as a section of its verification
page, next to the hand-written catalogue's matrix: the score with its interval, what each sampled mutant changed and
what caught it, and the survivors."""
from __future__ import annotations

from typing import Any

from stagewise.core.run import pages
from stagewise.core.run.provenance import chapter_code_fingerprint
from stagewise.core.sweep import mutants


def _operator(name: str) -> str:
    """cosmic-ray's operator name in words: ``core/ReplaceBinaryOperator_Mul_Div`` -> ``* -> /``."""
    signs = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Pow": "**", "Eq": "==", "NotEq": "!=", "Lt": "<",
             "LtE": "<=", "Gt": ">", "GtE": ">=", "USub": "unary -", "UAdd": "unary +", "Not": "not"}
    short = name.split("/")[-1]
    if short.startswith(("ReplaceBinaryOperator_", "ReplaceComparisonOperator_", "ReplaceUnaryOperator_")):
        old, new = short.split("_")[1:]
        return f"`{signs.get(old, old)}` → `{signs.get(new, new)}`" if old != "Delete" else f"`{signs.get(new, new)}` removed"
    return {"AddNot": "`not` added", "ReplaceTrueWithFalse": "`True` → `False`", "ReplaceFalseWithTrue":
            "`False` → `True`", "ReplaceAndWithOr": "`and` → `or`", "ReplaceOrWithAnd": "`or` → `and`",
            "NumberReplacer": "a number changed", "ReplaceBreakWithContinue": "`break` → `continue`",
            "ReplaceContinueWithBreak": "`continue` → `break`", "ZeroIterationForLoop": "a loop runs zero times"
            }.get(short, short)


def chapter_section(chapter, stored: dict[str, Any] | None) -> list[str]:
    """Markdown lines of the section (target ``mutants-<chapter>``)."""
    lines = [f"(mutants-{chapter.name})=", "## What a mutation tool finds: a sample of its mutants", ""]
    if stored is None:
        return lines + [":::{warning}", f"No sample is stored for this chapter: run `make mutants` "
                        f"(`stagewise mutants {chapter.name}`).", ":::", ""]
    if stored.get("fingerprint") != chapter_code_fingerprint(chapter.name, chapter.source):
        lines += [":::{warning}", f"**Stale.** This sample was measured on older code (commit "
                  f"`{str(stored.get('commit', 'unknown'))[:10]}`); `make mutants` measures it again.", ":::", ""]
    s, c = stored["score"], stored["counts"]
    modules = ", ".join(f"`{m.split('/')[-1]}`" for m in stored["modules"])
    lines += [f"The catalogue above holds bugs chosen by hand. As a broad measure that nobody chose, "
              f"{stored['tool']}'s operators (arithmetic and comparison operators swapped, signs, `not`, booleans, "
              f"`and`/`or`, numbers, `break`/`continue`, loops that run zero times) make "
              f"{stored['population']} mutants of the chapter's science modules ({modules}). "
              f"A random sample of {stored['sampled']} (seed {stored['seed']}) was measured: first against the unit "
              "tests that import the mutated module, then, if they pass, through the chapter at its default "
              "parameters beside the unmodified run. A mutant is *equivalent* when every result, row and figure "
              "array of that run is identical to the unmodified run's, bit for bit.", ""]
    if s["fraction"] is not None:
        low, high = s["interval"]
        lines += [f"**{s['detected']} of {s['non_equivalent']} non-equivalent mutants detected ({s['fraction']:.0%}; "
                  f"95% Wilson interval {low:.0%} to {high:.0%})**: {c[mutants.UNIT]} by the unit tests, "
                  f"{c[mutants.CHAPTER_ROWS]} by a row of the chapter or a changed published finding, "
                  f"{c[mutants.CRASHED]} made the chapter stop with an error; {c[mutants.EQUIVALENT]} equivalent, "
                  f"{c[mutants.SURVIVED]} survived.", ""]
    lines += ["Every sampled mutant, what it changed and what caught it:", ""]
    for i, r in enumerate(stored["mutants"], 1):
        where = f"`{r['path'].split('/')[-1]}:{r['line']}`" + (f" in `{r['definition']}`" if r["definition"] else "")
        outcome = "**SURVIVED**" if r["outcome"] == mutants.SURVIVED else r["outcome"]
        how = " ".join(str(r.get("detail", "")).split())[:160]
        lines.append(f"- M{i}: {_operator(r['operator'])} at {where}: {outcome}" + (f" ({pages.escape(how)})" if how else "") + ".")
    lines.append("")
    return lines
