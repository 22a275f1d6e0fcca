"""Every chapter has the book's one skeleton (README, 'Layout'): notation table, parameters cell,
one setup cell that starts the run and names its random streams, short cells, one final Checks section."""
import re

import pytest

from stagewise.core.run.registry import all_chapters

CHAPTERS = all_chapters()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.name for c in CHAPTERS])
def test_chapter_follows_the_skeleton(chapter):
    nb = chapter.notebook()
    code = [c for c in nb.cells if c.cell_type == "code"]
    text = chapter.source.read_text()
    assert "parameters" in code[0].metadata.get("tags", []), "the parameters cell comes first"
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
    assert re.search(r"^\|\s*symbol\s*\|\s*code", text, re.M | re.I), "a notation table (symbol | code name | ...)"
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings.count("Checks") == 1
    after_checks = text[text.index("\n## Checks"):]
    assert "run.check" not in text[:text.index("\n## Checks")], "every check sits in the Checks section"
    assert "run.finish()" in after_checks
    longest = max(len(c.source.splitlines()) for c in code[1:])
    assert longest <= 30, f"a code cell of {longest} lines"
