"""The book, made from the runs.

Owns the build (:mod:`.build`: stale chapters executed once, the HTML), the figure menus and gallery
(:mod:`.figure_pages`), the appendix of mutation matrices (:mod:`.power_page`), the PDF (:mod:`.pdf`), the browser
that reads the pages (:mod:`.browser`), and the lanes that run the chapters as a reader does (:mod:`.lanes`,
:mod:`.downloads`).

May import: ``stagewise.core.run``, ``stagewise.core.checks``, ``stagewise.core.figures``, ``stagewise.core.sweep``.
"""
