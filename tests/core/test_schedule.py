"""`stagewise book --jobs N` starts the longest chapter first: its last wall time on this machine when the
executed folder has one, else the chapter's `expected_seconds` (front matter), so that a cold build on two
cores ends near max(longest, total / 2)."""
import json

from stagewise.core.book import build as book
from stagewise.core.run.registry import all_chapters


def test_every_book_chapter_states_its_expected_time():
    for chapter in all_chapters():
        assert float(chapter.front_matter.get("expected_seconds", 0)) > 0, chapter.name


def test_longest_first_on_a_fresh_clone(tmp_path, monkeypatch):
    monkeypatch.setenv(book.EXECUTED_DIR_ENV, str(tmp_path))  # nothing executed yet
    order = [p.chapter.name for p in book.longest_first(book.plan())]
    stated = {c.name: float(c.front_matter["expected_seconds"]) for c in all_chapters()}
    assert order == sorted(stated, key=stated.get, reverse=True)
    assert stated[order[0]] > stated[order[-1]]  # the front matter states different times: the order is not trivial


def test_this_machines_last_time_wins_and_up_to_date_chapters_are_left_out(tmp_path, monkeypatch):
    monkeypatch.setenv(book.EXECUTED_DIR_ENV, str(tmp_path))
    (tmp_path / "relu-orthogonal").mkdir()
    (tmp_path / "relu-orthogonal" / "results.json").write_text(json.dumps({"provenance": {"wall_seconds": 999}}))
    (tmp_path / "linear-riccati").mkdir()
    (tmp_path / "linear-riccati" / "results.json").write_text("{not json")  # broken: stale, and the stated time
    plans = book.plan()
    assert book.longest_first(plans)[0].chapter.name == "relu-orthogonal"
    linear = next(p for p in plans if p.chapter.name == "linear-riccati")
    assert book.expected_seconds(linear) == float(linear.chapter.front_matter["expected_seconds"])
    plans[0].reason = None
    assert plans[0].chapter.name not in [p.chapter.name for p in book.longest_first(plans)]


def test_makespan_of_the_stated_times_on_two_cores():
    """Longest first on two workers meets Graham's guarantee for LPT (at most 7/6 of the best split of the stated
    times, found by trying every split) and ends no later than table-of-contents order (the old queue)."""
    import itertools
    stated = {c.name: float(c.front_matter["expected_seconds"]) for c in all_chapters()}

    def makespan(order):
        free = [0.0, 0.0]
        for name in order:
            free[free.index(min(free))] += stated[name]
        return max(free)

    times = list(stated.values())
    best = min(max(sum(t for t, a in zip(times, side) if a), sum(t for t, a in zip(times, side) if not a))
               for side in itertools.product((0, 1), repeat=len(times)))
    lpt = makespan(sorted(stated, key=stated.get, reverse=True))
    toc = makespan([c.name for c in all_chapters()])
    assert lpt <= 7 / 6 * best + 1e-9 and lpt <= toc, (lpt, toc, best)


def test_an_unreadable_results_file_makes_its_chapter_stale(tmp_path, monkeypatch):
    monkeypatch.setenv(book.EXECUTED_DIR_ENV, str(tmp_path))
    for content in ("{not json", "[1, 2]"):
        (tmp_path / "linear-riccati").mkdir(exist_ok=True)
        (tmp_path / "linear-riccati" / "results.json").write_text(content)
        reasons = {p.chapter.name: p.reason for p in book.plan()}
        assert reasons["linear-riccati"] in ("results.json unreadable", "last execution did not complete")


def test_the_record_of_a_chapters_inputs_decides_whether_it_runs_again(tmp_path, monkeypatch):
    """A chapter is up to date when the book's record of its last execution names today's inputs and the results
    that execution wrote; results written since by anything else, or changed inputs, make it stale; the record
    lives beside the run folders, never in one."""
    import hashlib
    import json as _json
    monkeypatch.setenv(book.EXECUTED_DIR_ENV, str(tmp_path))
    chapter = next(c for c in all_chapters() if c.name == "linear-riccati")
    results = tmp_path / chapter.name / "results.json"
    results.parent.mkdir()
    results.write_text(_json.dumps({"status": "complete"}))
    reason = lambda: {p.chapter.name: p.reason for p in book.plan()}[chapter.name]   # noqa: E731
    assert reason() == "not executed by a book build (no record of its inputs)"
    stamp = book.inputs_stamp(chapter.name)
    assert stamp.parent.parent == tmp_path and stamp.parent != results.parent
    stamp.parent.mkdir()
    digest = hashlib.sha256(results.read_bytes()).hexdigest()
    stamp.write_text(_json.dumps({"book_inputs": book.book_inputs(chapter), "results": digest}))
    assert reason() is None
    stamp.write_text(_json.dumps({"book_inputs": "older code", "results": digest}))
    assert reason() == "code changed (chapter, the code it runs, or requirements)"
    stamp.write_text(_json.dumps({"book_inputs": book.book_inputs(chapter), "results": digest}))
    results.write_text(_json.dumps({"status": "complete", "parameters": {"seed": 1}}))   # a run by hand since
    assert reason() == "executed outside the book build since"
