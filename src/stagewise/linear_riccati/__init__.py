"""Code of the chapter "The Riccati solution and the spectral bias of two-layer linear networks".

The chapter (``book/chapters/linear-riccati.md``) follows Varre et al. (2023): two-layer linear networks trained
from the initialization I_gamma reduce exactly to d x d coordinates; on whitened data every singular value of the
predictor follows a scalar Riccati equation with a closed form; as gamma -> 0 they are learned one at a time
(a jump process); training ends at the minimum-norm interpolator with a hidden layer that minimizes a
norm-minus-log-determinant objective. Sections on label noise and a ReLU teacher-student close it.

Statements of the chapter (``prf`` labels) and the functions that implement or test them:

==================================  ==================================================================================
``thm-linear-riccati-init``         ``initialization.orthogonal_init``, ``initialization.reduced_init``,
                                    ``parameters.check_gamma`` (Definition: I_gamma, gamma > 0)
``thm-linear-riccati-reduction``    ``gradient_descent.gd`` (full width = reduced), ``gradient_flow.z_flow``
                                    (Lemma 3.1; reduced flow (3.4)), ``reduction.full_vs_reduced``,
                                    ``reference.gd_reference``
``thm-linear-riccati-invariant``    ``gradient_flow.psd_sqrt``, ``implicit_bias.hidden_singular_values``,
                                    ``reduction.invariant_along_flow`` (Lemma 3.2 and Lemma C.10); GD drift in
                                    ``gamma_sweep.gamma_sweep``, ``gd_limit.drift_ratio``
``thm-linear-riccati-main``         ``implicit_bias.objective`` (Theorem 3.1, objective (3.1)),
                                    ``gamma_sweep.gamma_sweep`` (the stable (data set, gamma) pairs only),
                                    ``gd_limit.beta_error``, ``gd_limit.loss_at``, ``gd_limit.loss_before_tolerance``
                                    (near control),
                                    ``training_horizon.final_rate``, ``training_horizon.horizon_from_data`` (horizon
                                    from the drawn data)
``thm-linear-riccati-cor``          ``implicit_bias.corollary_spectrum``, ``implicit_bias.drift_bounds``,
                                    ``initialization.gaussian_init``, ``hidden_spectrum.gaussian_runs``,
                                    ``hidden_spectrum.hidden_spectrum`` (Corollary 3.1; gamma_eff; Figs. 1a and 4),
                                    ``gamma_sweep.gamma_sweep``, ``corollary_31.cor_vs_drift``,
                                    ``corollary_31.cor_relative`` (per gamma, relative),
                                    ``corollary_31.global_bound_bottom``
``thm-linear-riccati-varopt``       ``implicit_bias.variational_value``, ``implicit_bias.variational_numeric``,
                                    ``variational_certificate.variational_certificate``,
                                    ``variational_certificate.variational_gap``, ``objective_31.gap_vs_drift``,
                                    ``objective_31.gap_relative``, ``objective_31.limit_gap`` (per gamma; the limit
                                    of I_gamma/2), ``objective_31.gap_vs_drift_steps_mixed`` (near control)
``thm-linear-riccati-mirror``       ``mirror_flow.mirror_grad``, ``mirror_flow.mirror_grad_paper``,
                                    ``gradient_flow.beta_ode_field``, ``gradient_flow.beta_flow``,
                                    ``gradient_flow.singular_value_trajectories`` (Theorem 3.2(a)),
                                    ``mirror_experiments.mirror_identity``
    (part (b))                      ``mirror_flow.psi_k1``, ``mirror_flow.rate_bound_k1``, ``mirror_flow.dual_flow_k1``
                                    (Theorem 3.2(b), Lemma C.8), ``mirror_experiments.k1_mirror_flow``
``thm-linear-riccati-alpha``        ``riccati.sigma_alpha``, ``riccati.sigma_beta_paper`` (Lemma 3.3: alpha and beta =
                                    2 gamma (I - alpha alpha^T)^{-1} alpha)
``thm-linear-riccati-closed``       ``riccati.sigma_beta``, ``riccati.sigma_alpha``, ``riccati.sigma_beta_paper``,
                                    ``riccati.sigma_beta_ode``, ``data.make_whitened``,
                                    ``whitened_gd.whitened_mode_recursion`` (Theorem C.12; exact per-mode GD),
                                    ``whitened_experiments.gd_vs_closed_form``,
                                    ``whitened_experiments.closed_form_accuracy``, ``mirror_experiments.offdiagonal``
                                    (Theorem C.11, static singular vectors)
``thm-linear-riccati-halftime``     ``riccati.half_time`` (GD crossings in ``whitened_experiments``)
``thm-linear-riccati-jump``         ``jump_process.jump_time``, ``jump_process.jump_process``,
                                    ``jump_process.rescaled_half_time_first_order``,
                                    ``jump_process.half_time_remainder``, ``jump_process.remainder_first_order``,
                                    ``jump_process.remainder_second_order_scale``, ``whitened_experiments.jump_rates``,
                                    ``whitened_experiments.remainder_tested_powers``
``thm-linear-riccati-noise``        ``noise_sde.sde_paths``, ``noise_sde.moments_discrete``,
                                    ``noise_sde.moments_exact``, ``gradient_descent.gd(label_noise=...)``,
                                    ``noise_experiments.label_noise_gd``, ``noise_experiments.decay_rates`` (the
                                    decay rate at eta, eta/2 and extrapolated to eta -> 0),
                                    ``noise_experiments.pure_noise_sde``, ``noise_experiments.uncoupled_drops``,
                                    ``noise_experiments.half_variance_rate`` (controls)
``thm-linear-riccati-relu``         ``relu_teacher.teacher_student``, ``relu_teacher.rank_ratios`` (Figs. 2 and 5:
                                    an observation of the paper, no theory)
==================================  ==================================================================================

Modules:

- ``parameters``: the chapter's cross-parameter validator (front matter) and the gamma > 0 check.
- ``data``: the rescaled regression problem (Fig. 1a), whitened data, random orthogonal matrices.
- ``initialization``: I_gamma at full width, its reduced coordinates, and Gaussian initializations.
- ``gradient_descent``: batched GD (2.3)-(2.4), compiled on CPU, with optional label noise.
- ``gradient_flow``: the reduced flow (3.4), the closed beta-ODE, and the closed-form / ODE choice.
- ``riccati``: the closed form of Theorem C.12 (stable and literal), its scalar ODE, exact half-learning times.
- ``jump_process``: the gamma -> 0 jump process and the first-order correction of the learning times.
- ``implicit_bias``: Lemma C.10's hidden spectrum, Corollary 3.1, objective (3.1) and its minimum.
- ``mirror_flow``: the mirror-map gradients of Theorem 3.2(a) and the k = 1 flow of Theorem 3.2(b).
- ``whitened_gd``: exact GD on whitened data, mode by mode, with its invariant law.
- ``noise_sde``: Euler-Maruyama for the pure-noise SDE (4.1) and its exact moments.
- ``relu_teacher``: the ReLU teacher-student of Figs. 2 and 5 (compiled GD) and its rank summary.
- ``reference``: plain per-step loops that the benchmark times the batched code against.

Experiments (one per section of the chapter; each returns a dataclass) and figures:

- ``reduction``: full-width vs reduced GD (Lemma 3.1) and the invariant along the flow (Lemma 3.2, C.10).
- ``hidden_spectrum``: Gaussian-initialization runs and the final hidden spectrum (Figs. 1a and 4).
- ``gamma_sweep``: the gamma sweep at eta and eta/2 (Theorem 3.1, Corollary 3.1) and its early-stopped control.
- ``gd_limit``: where the sweep's GD ends (its record) against beta_*, the loss and the invariant (Theorem 3.1).
- ``corollary_31``: Corollary 3.1 at the sweep's limit, against the drift, at eta -> eta/2 and per gamma.
- ``objective_31``: the objective (3.1) at the sweep's limit against V* (Theorem 3.1(iii)), per gamma and the drift.
- ``training_horizon``: the sweep's training time from the drawn data (final rate, curvature at the limit).
- ``variational_certificate``: the L-BFGS certificate of V*.
- ``mirror_experiments``: the mirror identity along the beta-ODE, and the k = 1 mirror flow with its bounds.
- ``whitened_experiments``: GD vs the Riccati closed form, half-times, and the approach to the jump process.
- ``noise_experiments``: label-noise GD (Fig. 1b) and the pure-noise SDE (Fig. 3).
- ``figure_data``: what each figure plots (the signature figure: the closed form against GD and Corollary 3.1), as plain arrays (with the closed-form curves), for its sidecar.
- ``figures``: one pure render function per figure, ``render(data, style)`` (no torch, no computation).

Shared helpers come from :mod:`stagewise.numerics` (``fits.loglog_slope``, ``fits.first_crossing``,
``spectra.stable_rank_np``, ``flows.assert_finite``/``DivergenceError``).
"""
