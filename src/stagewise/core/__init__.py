"""The book machine: everything that runs chapters, and nothing of the science.

Five rooms and the command line, each a subpackage named by its role. Its docstring says what it owns and what
it may import; :data:`MAY_IMPORT` is the same rule as data, and ``tests/core/test_layout.py`` enforces it on
every import of every module (at top level or inside a function).

===========  ==========================================================================================
``checks``   a row of a checks table, its control and verdict; the bug catalogues and the mutation hook;
             Markdown tables. The lowest room: imports nothing else of ``core``.
``figures``  figure export (PDF, SVG, PNG under one stem), style presets, data sidecars, the restyling
             command's drawing. Imports nothing else of ``core``.
``run``      one run of one chapter: the registry of chapters, parameters, the device, provenance, safe run
             folders, locks, crash leftovers, fault injection, the runner (papermill) and the notebook's
             session (``stagewise.start``, ``Run``), the results schema. Imports ``checks`` and ``figures``.
``sweep``    many runs on Dask: grids, the sweep engine, collecting a sweep, the parameter atlas, the mutation
             matrix (a catalogue run through its chapter). Imports ``run``, ``checks``, ``figures``.
``book``     the book from the runs: the build, figure pages, the mutation appendix, the PDF, the browser,
             the nbmake and as-downloaded lanes. Imports ``run``, ``checks``, ``figures``, ``sweep``.
``cli``      the ``stagewise`` command. Imports any room.
===========  ==========================================================================================

A chapter's kernel imports ``run``, ``checks`` and ``figures`` only (never ``sweep``, ``book``, ``cli`` or the
restyling command): :data:`stagewise.core.run.provenance.OUTSIDE_THE_KERNEL`. ``core`` never imports a chapter
subpackage or ``numerics``; a chapter's cross-parameter validator is found by name from its front matter.
"""

#: For each room of core, the other rooms its modules may import (the layout test reads this).
MAY_IMPORT = {
    "checks": frozenset(),
    "figures": frozenset(),
    "run": frozenset({"checks", "figures"}),
    "sweep": frozenset({"run", "checks", "figures"}),
    "book": frozenset({"run", "checks", "figures", "sweep"}),
    "cli": frozenset({"run", "checks", "figures", "sweep", "book"}),
}
