"""Code of the chapter "Saddle-to-saddle jumps of two-layer ReLU networks on orthogonal data".

Book file: ``book/chapters/relu-orthogonal.md``. After Town, Boursier, Lewis, Englert, Lazić
(2026), ``town2026relu``: gradient descent from a tiny balanced initialisation on orthonormal
inputs follows, as lambda -> 0, a jump process that Algorithm 1 computes without training, and
reaches an interpolator whose squared norm is of order sqrt(n).

Statements of the chapter (``prf`` labels) and the code implementing them:

================================  =========================================================
``ass-relu-orthogonal-init``      Assumption 3, balanced small init: ``data.balanced_init``,
                                  ``training.balanced_state`` (and ``data.he_init``, the
                                  lazy contrast of Fig. 6)
``prop-relu-orthogonal-balance``  Proposition 1, balancedness and sign conservation:
                                  ``balance.balancedness_drift``; ``training.gd_numba``
                                  (``track_balance``; ``GDResult.imbalance_max``,
                                  ``sign_flips``)
``def-relu-orthogonal-mask``      Assumption 4, mask and activation sets:
                                  ``data.activation_mask``, ``data.uncovered_points``,
                                  ``data.coverage_report``, ``algorithm.find_instances``;
                                  when it fails: ``assumption4.interpolation_iff_covered``,
                                  ``assumption4.tie_experiment``
``alg-relu-orthogonal-alg1``      Algorithm 1, the limit process: ``algorithm.algorithm1``,
                                  ``algorithm.LimitProcess``, ``algorithm.neuron_rates``
``thm-relu-orthogonal-jumps``     Theorem 2, convergence to the jump process:
                                  ``LimitProcess.loss``/``exponents``; measured by
                                  ``diagnostics.measured_jumps``, ``plateau_errors``,
                                  ``exponent_errors``, ``jump_offsets_nats``, tolerances
                                  ``plateau_error_scale``; experiments
                                  ``staircase.predict_figure1``/``train_figure1``/
                                  ``measure_figure1`` and ``sweep.run_sweep``/``measure_sweep``
                                  (draws: ``sweep.selection_tally``); wrong theories held
                                  against it: ``algorithm.frozen_prediction``,
                                  ``frozen_rates``, ``frozen_jump_times``,
                                  ``memoryless_staircase``; finite-lambda gaps of Figs. 5
                                  and 6: ``gd_norms.gap_closing``, ``width_study.gap_closing``
``prop-relu-orthogonal-coverage`` Proposition 2, coverage: ``coverage.coverage_exact``,
                                  ``coverage_union_bound``, ``assumption4_union_bound``,
                                  ``coverage_monte_carlo``, ``half_coverage_width``,
                                  ``coverage_study``
``thm-relu-orthogonal-norms``     Eq. (15) and the sandwich: ``LimitProcess.norm_sq``,
                                  ``norms.min_norm_sq``, ``norms.sandwich``,
                                  ``diagnostics.norm_error_scale``,
                                  ``gd_norms.norm_vs_n_gd`` (GD lower bound)
``thm-relu-orthogonal-sqrtn``     Theorem 3, sqrt(n) scaling: ``norms.width_rule``,
                                  ``norm_scaling.norm_vs_n``, ``width_study.norm_vs_width``
``prop-relu-orthogonal-width``    Figure 6 (width trend, an empirical claim) and the lazy-training
                                  heuristic for the He init: ``width_study.norm_vs_width``,
                                  ``small_init_gd``, ``lazy_solution``, ``lazy_distance``,
                                  ``he_training``, ``he_fit_ratio``
================================  =========================================================

Modules:

* ``data``: labels, balanced and He initialisations, the mask of Assumption 4, seeded draws.
* ``algorithm``: Algorithm 1, its output ``LimitProcess``, draw selection with it.
* ``norms``: Eq. (15)'s norms, the sandwich bound, the width rule of Fig. 5.
* ``coverage``: Proposition 2's coverage probability (exact, union bounds, Monte Carlo, study).
* ``training``: compiled, batched gradient descent in exact log-scale form (``GDResult``).
* ``diagnostics``: a GD run measured against Algorithm 1, and the predicted error scales.
* ``balance``: the balancedness-drift experiment (Proposition 1).
* ``staircase``: the paper-scale Figure 1 run: prediction, training, measurements.
* ``sweep``: Theorem 2 as lambda -> 0, several draws and lambdas in one batch.
* ``assumption4``: when Assumption 4 fails: uncovered points, ties.
* ``norm_scaling``: Theorem 3's norm-versus-n study of Algorithm 1 and its growth test (Fig. 5).
* ``gd_norms``: gradient descent's norm against n, its fit and its gap to Algorithm 1 (Fig. 5).
* ``width_study``: the norm-versus-width experiment and the lazy He runs (Fig. 6).
* ``figure_data``: what each figure plots, taken out of the experiments' results as plain arrays (its sidecar).
* ``figures``: the chapter's figures, one pure render function ``render(data, style)`` each (no torch).
* ``reference``: the plain NumPy GD loop the tests and the benchmark compare against.
* ``parameters``: the chapter's cross-parameter validator ``check_parameters``.
* ``bugs``: the catalogue of realistic bugs that ``stagewise power`` runs through the chapter.
"""
