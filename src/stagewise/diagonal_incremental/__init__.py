"""Chapter "Algorithm 1: incremental learning in networks with diagonal weights" (diagonal-incremental.md).

Boix-Adsera et al. (2023) prove that gradient flow from a tiny initialization of a network with diagonal
weights learns in stages, switching on at most one coordinate of ``beta = u * v`` per stage, and give
Algorithm 1, which predicts the stage times and plateaus without training. The chapter implements
Algorithm 1 (with errata), simulates gradient flow exactly on the log scale down to ``alpha = 1e-300``,
and checks the limit theorem, its assumptions and a full-weight attention head beyond the theory.

Statements of the chapter (``prf`` labels) and the code implementing them:

    def-diagonal-incremental-diag        Definition 3.1   networks.DiagonalModel, networks.LinearDiagonal
    ex-diagonal-incremental-transformer  Example 3.2      attention.DiagonalAttention, attention.attention_output,
                                                          attention.make_teacher_problem, plateaus.support_counts
    lem-diagonal-incremental-conservation Lemma 4.2       flow.log_scale_flow, flow.beta_of_b, flow.weights_from_b,
                                                          flow.normalize_init, descent.conservation_study
    alg-diagonal-incremental-alg1        Algorithm 1      algorithm.algorithm1, algorithm.time_until_active,
                                                          algorithm.train_active, closed_forms.closed_form_orthogonal
    thm-diagonal-incremental-main        Theorem 4.1      staircase.flow_study, transitions.transition_study,
                                                          plateau_states.plateau_study, log_scale.log_scale_study,
                                                          plateaus.transition_times, plateaus.count_plateaus
                                                          (threshold plateaus.drop_threshold from the plateau losses),
                                                          plateaus.plateau_midpoints, numerics.fits.inverse_log_fit,
                                                          transitions.TransitionStudy.settled_only (settled stages),
                                                          plateau_states.entries_outside (one new coordinate per
                                                          transition), relaxation.relaxation_rates (settled plateaus),
                                                          transitions.memoryless_time_error (control: memoryless race)
    asm-diagonal-incremental-43          Assumption 4.3   algorithm.algorithm1 (race margins, ties, Breakdown),
                                                          algorithm.train_active (1/t decay, g = 0 at the limit),
                                                          flow.normalize_init (|u_i(0)| != |v_i(0)|)
    asm-diagonal-incremental-44          Assumption 4.4   assumptions.balanced_hessian_min (the paper's Hessian),
                                                          networks.restricted_hessian_min (Algorithm 1's test),
                                                          perturbations.perturbation_study (the paper's Fig. 10)
    asm-diagonal-incremental-45          Assumption 4.5   assumptions.stage_b_spread (control: stage_b_off_support),
                                                          perturbations.new_coordinate_study (the paper's Fig. 11)
    prop-diagonal-incremental-finite-alpha  finite alpha  finite_alpha.finite_alpha_study,
                                                          finite_alpha.settled_stages,
                                                          closed_forms.orthogonal_transition_times
    prop-diagonal-incremental-gd         GD identity      descent.descend, descent.gradient_descent,
                                                          descent.identity_error, descent.conservation_study
    rem-diagonal-incremental-gd-flow     GD's delay       tracking.rate_flow, tracking.tracking_study,
                                                          tracking.time_miss
    lem-diagonal-incremental-d4          Lemma D.4        correlated.lemma_d4_holds, correlated.correlated_study,
                                                          correlated.algorithm_reenters, correlated.flow_reenters,
                                                          algorithm.train_active (dropped coordinates)
    obs-diagonal-incremental-full-head   full head        full_head.full_head_gd, full_head.one_at_a_time
    (the three assumptions together: assumptions.assumption_study)

Modules:

    parameters     cross-parameter validator of the chapter's front matter (check_parameters)
    networks       the DiagonalModel interface (Ltilde, g = -grad Ltilde), diagonal linear network, restricted Hessian
    attention      the diagonal attention head of Example 3.2 (analytic g, numba on CPU) and its teacher instance
    algorithm      Algorithm 1: the race of stage (A) and the balanced flow of stage (B); Stage, Stages, Breakdown
                    (a hypothesis the instance breaks), DegenerateStageError (a bug)
    closed_forms   Algorithm 1 in closed form for Sigma = I
    flow           exact gradient flow at small initialization through b = log_alpha(u + v)
    descent        plain gradient descent on (u, v) with the exact conservation identity; the conservation study
    tracking       gradient descent against the flow: the clocks at GD's rates log(1 +- eta g)/eta (its delay)
    plateaus       measured staircase primitives: transition times, plateau counts, midpoints, supports
    staircase      Theorem 4.1's setting: Algorithm 1 and the exact flow at several alphas (FlowStudy), the teacher
    transitions    Theorem 4.1's transition times: measured, extrapolated in 1/log(1/alpha), the checks' measures
    relaxation     how fast the flow settles on each plateau (rates, e-foldings: which plateaus are resolved)
    plateau_states Theorem 4.1 on the plateaus: loss, weights, ranks at the midpoints; entries between plateaus
    log_scale      b = log_alpha(u + v) against Algorithm 1's bookkeeping b^k (eq. 12)
    correlated     Lemma D.4's correlated example: a coordinate leaves and re-enters with the opposite sign
    assumptions    Assumptions 4.3-4.5 in practice: margins, Hessians, stage (B) reruns
    perturbations  the paper's perturbation protocols: on a plateau (Fig. 10), at a new coordinate (Fig. 11)
    full_head      beyond the theory: one attention head with full weight matrices
    figure_data    what each figure plots, taken out of the studies as plain arrays (the figures' data sidecars)
    figures        the chapter's eight figures: pure render functions render(data, style), no torch
    tables         the table of Algorithm 1's stages
    bugs           the catalogue of realistic bugs that ``stagewise power`` runs through the chapter
    reference      plain references for the benchmark and tests (autograd g, one GD run at a time)
"""
