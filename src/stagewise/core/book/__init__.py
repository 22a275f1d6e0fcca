"""The book, made from the runs.

Owns the build (:mod:`.build`: stale chapters executed once, the HTML), each chapter's story and verification
pages (:mod:`.verification_page`) and their shape as a reader sees it (:mod:`.shape`), the figure menus and gallery
(:mod:`.figure_pages`), the mutation matrices (:mod:`.power_page`), the PDF (:mod:`.pdf`), the browser
that reads the pages (:mod:`.browser`), and the lanes that run the chapters as a reader does (:mod:`.lanes`,
:mod:`.downloads`).

May import: ``stagewise.core.run``, ``stagewise.core.checks``, ``stagewise.core.figures``, ``stagewise.core.sweep``.
"""
