"""Checks: what makes a run evidence.

Owns a row of a chapter's checks table (a theorem, sanity or empirical row, its criterion, its computed control and
verdict: :mod:`.rows`), the chapters' catalogues of realistic bugs and the hook that installs one in a kernel
(:mod:`.catalogue`), the mutation hook of the tests (:mod:`.mutation`) and small Markdown tables (:mod:`.tables`).

May import: nothing else of ``stagewise.core`` (the lowest room; a caller passes the chapter registry where a
catalogue needs it).
"""
