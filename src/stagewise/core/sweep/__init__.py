"""Many runs of a chapter on Dask.

Owns parameter grids (:mod:`.grid`), the sweep engine (:mod:`.engine`: each point an ordinary run, resumable), a
sweep's table and figure (:mod:`.collect`), and the two campaigns run on it: the parameter atlas (:mod:`.atlas`)
and the mutation matrix (:mod:`.power`).

May import: ``stagewise.core.run``, ``stagewise.core.checks``, ``stagewise.core.figures``.
"""
