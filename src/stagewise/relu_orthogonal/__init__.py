"""Code of the chapter "Saddle-to-saddle jumps of two-layer ReLU networks on orthogonal data".

Book file: ``book/chapters/relu-orthogonal.md``. After Town, Boursier, Lewis, Englert, Lazić
(2026), ``town2026relu``: gradient descent from a tiny balanced initialisation on orthonormal
inputs follows, as lambda -> 0, a jump process that Algorithm 1 computes without training, and
reaches an interpolator whose squared norm is of order sqrt(n).

Statements of the chapter (``prf`` labels) and the code implementing them:

===============================  ==========================================================
``ass-relu-orthogonal-init``     Assumption 3, balanced small init: ``data.balanced_init``,
                                 ``training.balanced_state``
``prop-relu-orthogonal-balance`` Proposition 1, balancedness and sign conservation:
                                 ``training.gd_numba`` (``track_balance``; ``GDResult``
                                 ``imbalance_max``, ``sign_flips``)
``def-relu-orthogonal-mask``     Assumption 4, mask and activation sets:
                                 ``data.activation_mask``, ``data.coverage_report``,
                                 ``data.find_instances`` (draws satisfying it)
``alg-relu-orthogonal-alg1``     Algorithm 1, the limit process: ``algorithm.algorithm1``,
                                 ``algorithm.LimitProcess``, ``algorithm.neuron_rates``
``thm-relu-orthogonal-jumps``    Theorem 2, convergence to the jump process:
                                 ``LimitProcess.loss``/``exponents``,
                                 ``diagnostics.measured_jumps``, ``plateau_errors``,
                                 ``exponent_errors``, ``jump_offsets_nats``, ``extrapolate``,
                                 ``plateau_error_scale``
``prop-relu-orthogonal-coverage`` Proposition 2, coverage: ``coverage.coverage_exact``,
                                 ``coverage_union_bound``, ``assumption4_union_bound``,
                                 ``coverage_monte_carlo``, ``half_coverage_width``
``thm-relu-orthogonal-norms``    Eq. (15) and the sandwich: ``LimitProcess.norm_sq``,
                                 ``norms.min_norm_sq``, ``norms.sandwich``,
                                 ``diagnostics.norm_error_scale``
``thm-relu-orthogonal-sqrtn``    Theorem 3, sqrt(n) scaling: ``norms.width_rule`` (the
                                 experiment itself is in the chapter)
===============================  ==========================================================

Modules:

* ``data``: labels, balanced initialisation, the mask of Assumption 4, seeded draws.
* ``algorithm``: Algorithm 1 and its output ``LimitProcess``.
* ``norms``: Eq. (15)'s norms, the sandwich bound, the width rule of Fig. 5.
* ``coverage``: Proposition 2's coverage probability (exact, union bounds, Monte Carlo).
* ``training``: compiled, batched gradient descent in exact log-scale form (``GDResult``).
* ``diagnostics``: a GD run measured against Algorithm 1, and the predicted error scales.
* ``reference``: the plain NumPy GD loop the tests and the benchmark compare against.
* ``tables``: small Markdown tables for the chapter.
* ``parameters``: the chapter's cross-parameter validator ``check_parameters``.
"""
