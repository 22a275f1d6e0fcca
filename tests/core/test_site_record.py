"""The record of what the HTML was made from: a build is skipped when nothing changed, and an edit to static files
alone is copied into the pages with the checksum Sphinx gives them, never when anything else changed too."""
import zlib

import pytest

from stagewise.core.book import site_record

PAGE = '<link rel="stylesheet" href="../_static/book.css?v={v}" /><script src="../_static/other.js?v=0badf00d"></script>'


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A miniature project: one page source, one style sheet, and a complete build of both on record."""
    (tmp_path / "book" / "_static").mkdir(parents=True)
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    css = tmp_path / "book" / "_static" / "book.css"
    css.write_text("body { color: black; }\n")
    html = tmp_path / "_build" / "html"
    (html / "_static").mkdir(parents=True)
    (html / "chapters").mkdir()
    (html / "index.html").write_text("<p>index</p>")
    (html / "_static" / "book.css").write_text(css.read_text())
    (html / "chapters" / "a.html").write_text(PAGE.format(v=f"{zlib.crc32(css.read_bytes()):08x}"))
    monkeypatch.setattr(site_record, "PROJECT_ROOT", tmp_path)
    monkeypatch.setattr(site_record, "BUILD_DIR", tmp_path / "_build")
    monkeypatch.setattr(site_record, "STATIC_DIR", tmp_path / "book" / "_static")
    monkeypatch.setattr(site_record, "SITE_STAMP", html / ".stagewise-site.json")
    monkeypatch.setattr(site_record, "site_inputs", lambda: sorted((tmp_path / "book").rglob("*.*")))
    site_record.write()
    return tmp_path


def test_a_complete_build_on_record_is_current_until_an_input_changes(project):
    assert site_record.html_is_current() and site_record.changed_inputs() == []
    (project / "book" / "intro.md").write_text("# Introduction\n")
    assert site_record.changed_inputs() == ["book/intro.md"] and not site_record.html_is_current()
    (project / "_build" / "html" / ".stagewise-site.json").unlink()
    assert site_record.changed_inputs() is None        # no record: nothing is known to be current


def test_an_edited_style_sheet_is_copied_in_with_its_new_checksum(project):
    css = project / "book" / "_static" / "book.css"
    css.write_text("body { color: navy; }\n")
    assert site_record.refresh_static() == ["book/_static/book.css"]
    built = project / "_build" / "html"
    assert (built / "_static" / "book.css").read_text() == css.read_text()
    page = (built / "chapters" / "a.html").read_text()
    assert f"book.css?v={zlib.crc32(css.read_bytes()):08x}" in page and "other.js?v=0badf00d" in page
    assert site_record.html_is_current()


def test_a_style_sheet_edited_beside_a_page_waits_for_the_whole_build(project):  # control of the copy
    css = project / "book" / "_static" / "book.css"
    before = (project / "_build" / "html" / "chapters" / "a.html").read_text()
    css.write_text("body { color: navy; }\n")
    (project / "book" / "intro.md").write_text("# Introduction\n")
    assert site_record.refresh_static() == []
    assert (project / "_build" / "html" / "_static" / "book.css").read_text() == "body { color: black; }\n"
    assert (project / "_build" / "html" / "chapters" / "a.html").read_text() == before
    assert not site_record.html_is_current()


def test_a_removed_static_file_waits_for_the_whole_build(project):
    (project / "book" / "_static" / "book.css").unlink()
    assert site_record.refresh_static() == [] and not site_record.html_is_current()
