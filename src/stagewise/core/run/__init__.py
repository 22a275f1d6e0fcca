"""One run of one chapter, from the command line to ``results.json``.

Owns the chapter registry (:mod:`.registry`), the parameters cell and its validation (:mod:`.parameters`), device,
dtype and threads (:mod:`.device`), provenance and code fingerprints (:mod:`.provenance`), run folders that never
lose a user's data (:mod:`.rundir`, :mod:`.locks`, :mod:`.leftovers`), fault injection for the safety tests
(:mod:`.faults`), the runner that executes a chapter with papermill (:mod:`.runner`), the notebook's side of a run
(:mod:`.session`: ``stagewise.start``, ``Run``), the results schema (:mod:`.results_schema`) and the cut of an
executed chapter into its story and verification pages (:mod:`.pages`), the statement labels rows name
(:mod:`.labels`) and the published findings (:mod:`.findings`).

May import: ``stagewise.core.checks`` and ``stagewise.core.figures``.
"""
