"""The book machine: everything that runs chapters, and nothing of the science.

=================  ====================================================================
``cli``            the ``stagewise`` command (list, params, run, book, clean)
``registry``       the chapters (one MyST notebook each in ``book/chapters``)
``parameters``     parameters declared in each chapter's ``parameters`` cell; validation
``runner``         executes a chapter with papermill into a safe run folder
``rundir``         run folders that never lose a user's data (manifest, staging, swap)
``locks``          one process per run folder and per book build (flock)
``leftovers``      what killed runs leave: marked FAILED, put back, cleaned
``checks``         theorem checks with controls, sanity rows, the checks table
``session``        the notebook side: ``stagewise.start`` and ``Run`` (values, checks,
                   figures, named random streams, ``results.json``)
``book``           builds the book from the run command's own executions
``figures``        figure style and export (PDF, SVG, PNG under one stem)
``provenance``     commit, versions, code fingerprint
``device``         device choice, dtype, seeding, thread count
``faults``         fault-injection points for the safety tests
``mutation``       replaces a package function in a chapter's kernel, for mutation tests
=================  ====================================================================

``core`` never imports a chapter subpackage or ``numerics``; a chapter's cross-parameter
validator is found by name from its front matter.
"""
