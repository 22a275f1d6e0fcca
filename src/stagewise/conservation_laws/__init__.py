"""Conservation laws of gradient flow in the book's model families (chapter ``conservation-laws``).

For a hidden neuron with a positively homogeneous activation, gradient flow conserves
``||theta_in||^2 - ||theta_out||^2``; one gradient-descent step changes such a conserved
quadratic form by exactly ``eta^2 Q(grad)``, so over a fixed time horizon the drift is linear
in the step size, with the coefficient ``C(T) = int_0^T Q(grad L) dt`` read off the flow; without homogeneity
(``tanh``) the law fails. The chapter checks all three in the diagonal, two-layer linear, two-layer ReLU and deep
ReLU networks. The gradient-descent
forms of the diagonal and ReLU laws are derived in the chapter from the one-step proposition;
the papers state only the gradient-flow laws.

Statements of the chapter (``{prf:...}`` labels) and the code implementing them:

========================================  ======================================================
``thm-conservation-laws-balancedness``    ``models.Family.invariant`` (every family),
(Theorem: Balancedness, Du, Hu & Lee       ``gradient_flow.gradient_flow_study``,
2018, Thm 2.1)                             ``gradient_flow.gradient_flow_field``,
                                           ``trajectory.max_drift``, ``flow_experiment.flow_experiment``
``thm-conservation-laws-one-step``         ``one_step_law.one_step_change``,
(Proposition: One gradient-descent step)   ``one_step_law.diagonal_product_law``,
                                           ``gradient_descent.gd_drift_study``,
                                           ``one_step_experiment.one_step_experiment``,
                                           ``drift_experiment.descent_experiment``,
                                           ``drift_experiment.family_descent`` (drift slopes by
                                           ``stagewise.numerics.fits.loglog_slope`` over the step
                                           sizes with ``eta lambda_max <= 1/2``: ``curvature``),
                                           ``drift_coefficient.coefficient_experiment`` (the drift
                                           is ``eta C(t)``, ``C`` integrated with the flow)
``thm-conservation-laws-diagonal``         ``models.FAMILIES["diagonal"]`` (``u_i^2 - v_i^2``),
(Corollary: Diagonal networks)             ``one_step_law.diagonal_product_law``
``thm-conservation-laws-linear``           ``models.FAMILIES["linear"]``
(Corollary: Two-layer linear networks)     (``W1^T W1 - W2 W2^T``),
                                           ``orthogonal_init.orthogonal_init_experiment`` (``I_gamma``,
                                           Varre et al.'s reduced coordinates ``Z``:
                                           ``orthogonal_init.reduced_invariant``)
``thm-conservation-laws-relu``             ``models.FAMILIES["relu"]`` (``a_j^2 - ||w_j||^2``;
(Corollary: Two-layer ReLU networks)       ``FAMILIES["tanh"]`` is the non-homogeneous counterexample),
                                           ``sign_experiment.sign_experiment`` (signs of ``a_j``; the
                                           boundary neuron ``sign_experiment.boundary_margin``)
``thm-conservation-laws-deep``             ``models.FAMILIES["deep_relu"]``,
(Corollary: Deep ReLU networks)            ``gradient_descent.gd_drift_study`` (layer norms),
                                           ``layer_growth.layer_growth``
========================================  ======================================================

Modules:

* ``models`` — the five model families (forward maps, parameter shapes) and their invariants.
* ``problem`` — the regression problem: orthogonal data, Gaussian initialization, square loss, gradient.
* ``one_step_law`` — the exact one-step change ``eta^2 Q(grad)`` and the diagonal product law.
* ``trajectory`` — invariant records along a run and their drift ``max_t |I(t) - I(0)|``.
* ``gradient_flow`` — gradient flow by an adaptive ODE solver (DOP853).
* ``gradient_descent`` — gradient descent batched over step sizes and seeds over one time horizon.
* ``curvature`` — the largest curvature ``||Hess L||_2`` (power iteration) and the quadratic model
  ``1 / (1 - eta lambda / 2)`` that decide which step sizes the slope is fitted over, and its window.
* The chapter's experiments, one module each, each returning a dataclass the notebook records and checks, with
  its rows' controls (the same measurements on a broken run or a wrong quantity):

  * ``problem_set`` — the five networks on their data with ``n_seeds`` initializations (``build_problems``),
    shared by every experiment.
  * ``flow_experiment`` — the invariants' drift under gradient flow; control ``broken_flow_drift``.
  * ``sign_experiment`` — the signs of the ReLU output weights, the balanced initialization and the boundary
    neuron; control ``boundary_margin`` at 0.99 of the balanced output weight.
  * ``orthogonal_init`` — ``I_gamma`` in Varre et al.'s reduced coordinates; control
    ``orthogonal_descent_error`` (gradient descent from ``I_gamma``).
  * ``drift_experiment`` — the gradient-descent drift, its slope in the step size and its intercept; controls
    ``norm_sum_slope`` and ``intercept_ratio_of``.
  * ``drift_coefficient`` — the drift's coefficient ``C(t) = int_0^t Q(grad L) ds`` integrated with the flow and
    compared with the descent runs at their record times; control ``same_step_count_excess`` (every step size run
    for the step count of the largest).
  * ``one_step_experiment`` — the one-step identity and the diagonal product law; control ``one_step_error``
    with the output layer's gradient halved.
  * ``descent_to_flow`` — the descent-versus-flow comparison ``descent_flow_gap``; control
    ``descent_gap_to_flow``.
  * ``layer_growth`` — the layers of the deep ReLU network growing together.
* ``bugs`` — the catalogue of realistic bugs of the experiment and measurement code that the chapter's
  checks must catch (``stagewise power conservation-laws``, :mod:`stagewise.core.sweep.power`).
* ``figures`` — the chapter's three figures (``figure_data``: what they plot).
* ``parameters`` — the chapter's cross-parameter validator ``check_parameters`` and its cost model
  ``expected_seconds``.
* ``reference`` — plain per-problem loops that the benchmark compares the batched code against.

Tests: ``tests/conservation_laws/test_conservation_<module>.py``.
"""
