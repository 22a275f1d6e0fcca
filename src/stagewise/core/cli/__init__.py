"""The ``stagewise`` command line: :mod:`.main` (list, params, run, book, pdf, figure, clean) and :mod:`.sweeps`
(sweep, collect, atlas, power).

May import: any room of ``stagewise.core``.
"""
