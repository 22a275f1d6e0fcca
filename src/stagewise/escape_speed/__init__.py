"""Code of the chapter "Escape speed and the low-rank bias of the first saddle escape".

Chapter: ``book/chapters/escape-speed.md`` (after Bantzis, Simon and Jacot, *Saddle-to-saddle
dynamics in deep ReLU networks*). A deep bias-free ReLU network trained from a small
initialization first escapes the saddle at the origin along an *escape direction* of the
localized loss ``L0(theta) = Tr[G^T f_theta(X)]``. The chapter computes optimal escape
directions and their speed ``s*(L)``, checks that ``s*(L)`` grows with depth and that deep layers
of the optima are rank one, and compares with gradient descent from small initialization.

Statements of the chapter (``prf`` labels) and the functions implementing them:

====================================  ====================================================================
``def-escape-speed-localized``        ``network.localized_loss``, ``network.forward``, ``network.mse_loss``
``lem-escape-speed-homogeneity``      ``network.localized_loss``, ``network.speed_and_grad``,
                                      ``network.homogeneity_error`` (Euler's identity)
``def-escape-speed-escape``           ``network.speed``, ``network.direction``, ``ascent.projected_ascent``,
                                      ``ascent.kkt_residual``, ``ascent.perturbation_gain``, ``ascent.power_iteration``,
                                      ``gradient_descent.direction_speed``, ``gradient_descent.alignment``
``prop-escape-speed-closed``          ``closed_forms.one_layer_speed`` (i), ``closed_forms.linear_speed``,
                                      ``closed_forms.linear_chain``, ``closed_forms.rank_one_chain`` and
                                      ``closed_forms.linear_study`` (ii), ``closed_forms.shallow_speed`` (iii),
                                      ``closed_forms.neuron_speed`` (iii, iv), ``deepening.DepthStudy.norm_bound_ok`` (v)
``prop-escape-speed-ex1``             ``problems.example1_data``, ``closed_forms.rank_one_speed_eq6`` (a),
                                      ``closed_forms.rank_two_construction`` (b), ``example1_rank_one.rank_one_scan``,
                                      ``example1_widths.ascent_width_sweep``, ``example1_widths.gd_success``
``conj-escape-speed-width``           ``example1_widths.ascent_width_sweep``, ``example1_widths.gd_success`` (runs that
                                      reach the rank-two speed), ``width_trend.width_growth`` (growth beyond a single
                                      step), ``example1_widths.step_width`` (the step-shaped control)
``prop-escape-speed-depth``           ``deepening.deepen``, ``deepening.deepening_check``, ``deepening.escape_by_depth``,
                                      ``deepening.depth_study``, ``theorem_31.deepened_rank`` (the added layers are rank
                                      one; ``deepening.identity_deepen`` is the control)
``prop-escape-speed-merge``           ``deepening.merge_most_linear`` (and the backward pass of ``escape_by_depth``)
``thm-escape-speed-lowrank``          ``theorem_31.thm31_constant``, ``theorem_31.thm31_bound``,
                                      ``layer_measures.layer_diagnostics``, ``theorem_31.optima_ranks``;
                                      the digits trend: ``digits.train_digits``, ``digits.summarize``
``conj-escape-speed-rank-one``        ``restart_ranks.restart_ranks``, ``restart_ranks.best_known``,
                                      ``restart_ranks.nontrivial_rank`` (the paper's conjecture 2 at depths where
                                      Theorem 3.1 is vacuous)
``prop-escape-speed-weak``            ``proposition_34.prop34_sides``, ``proposition_34.prop34_gap``
``prop-escape-speed-rank-one-input``  ``problems.near_rank_one_data``, ``proposition_33.prop33_bound``,
                                      ``proposition_33.prop33_speed_bracket``, ``proposition_33.prop33_study``
``prop-escape-speed-explosion``       ``explosion.ode_scale``, ``explosion.escape_time``, ``explosion.blowup_time``,
                                      ``explosion.flow``, ``explosion.aligned_flow``,
                                      ``closed_forms.single_neuron_escape``; the escape-time law:
                                      ``gradient_descent.euler_escape``, ``gradient_descent.escape_time_law``,
                                      ``gradient_descent.slope_band``
====================================  ====================================================================

Modules:

=====================  ==========================================================================
``network``            the bias-free ReLU network, localized loss ``L0``, speed, sphere init, padding
``parameters``         the chapter's cross-parameter validator (named in its front matter)
``ascent``             batched normalized projected ascent on the product of spheres; certificates
``closed_forms``       closed-form speeds (linear, shallow, rank one, Example 1) and explicit directions
``problems``           the datasets ``(X, G)``: Example 1, circles, Gaussian, teacher, nearly rank-one
``example1_rank_one``  Example 1 (a) and (b): the rank-one scan, Eq. (6) and the rank-two construction's gaps
``example1_widths``    the Example 1 width sweeps (ascent and GD): which runs find the faster escape
``width_trend``        Wilson and Newcombe intervals, the width-trend and width-growth tests and their verdicts
``deepening``          Proposition 3.2's deepening, the reverse merge, and the depth continuation
``layer_measures``     per-layer rank diagnostics: ``rho_nt`` of weights and representations, ReLU deviation ``nu``
``theorem_31``         Theorem 3.1's constant and bound; deep-layer ranks of the optima and of untrained nets
``restart_ranks``      the low-rank picture on random restarts of the solver (directions found, not built)
``proposition_33``     Proposition 3.3: bound, speed bracket, study on nearly rank-one inputs
``proposition_34``     Proposition 3.4: both sides of its inequality and the largest gap
``explosion``          Proposition 2.2: the per-layer ODE, escape and blow-up times, gradient flow
``gradient_descent``   gradient descent from small initialization (adaptive Euler, width sweep,
                       escape-time law, alignment with the optimum)
``digits``             the deep MLP on digit images (paper Figs 1, 3, 4)
``figures``            the chapter's figures (one function per figure id)
``bugs``               the catalogue of realistic bugs run through the chapter (``stagewise power``)
``reference``          plain reference loops for the tests and ``benchmarks/bench_escape_speed.py``
=====================  ==========================================================================
"""
