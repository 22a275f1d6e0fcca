"""Code of the chapter "Gradual rank increase in real transformers" (book/chapters/transformer-rank.md).

The chapter repeats the experiments of Boix-Adsera et al., *Transformers learn through gradual
rank increase* (NeurIPS 2023), Section 5 and Appendix B, offline and small: a vision
transformer on the digits (Adam at several initialization scales and SGD, all replicas in one
batched computation) and a character-level GPT on CPython's help texts; it follows the stable
rank of the change of each head's ``W_K W_Q^T`` and ``W_V W_O^T`` during training.

Statements of the chapter and the code that implements them:

* ``def-transformer-rank-srank`` (Definition, stable rank ``||W||_F^2 / ||W||_2^2``):
  ``spectra.Spectra.srank`` (via the shared ``stagewise.numerics.spectra.stable_rank_from_svals``).
* ``thm-transformer-rank-incremental`` (Theorem 4.1 of the paper, informal; additions only): context, tested in the
  diagonal-incremental chapter; its mechanism with full weights is the toy head of ``teacher``.
* ``obs-transformer-rank-low``, ``obs-transformer-rank-growth``, ``obs-transformer-rank-scale`` (the paper's
  observations (a)-(c) of Section 5 / Appendix B): ``experiments.run_vit`` (with the shuffled-label copies, the
  controls), ``experiments.run_gpt`` (with ``shuffle_generator``, the shuffled-character control),
  ``summaries.summarize_vit`` / ``summarize_gpt``, ``low_rank.low_rank_ratio``, ``rank_growth.trend``,
  ``scale_sweep.scale_gap`` / ``shuffled_gap`` (the observables), ``budget.budget_sweep`` (the growth verdicts
  against the budget), ``claims_table.claim_rows`` / ``record_claims`` / ``FailsOnControl`` (one empirical row per
  claim, reproduced only when its control fails).
* ``conj-transformer-rank-stages`` (ours: a full-weight head learns one direction at a time from a small start):
  ``teacher.run_toy`` / ``toy_rows`` and ``switch_on.settled_fraction`` (the one-at-a-time statistic).
* ``prop-transformer-rank-bound``, ``prop-transformer-rank-first-step``, ``prop-transformer-rank-adam-bound``,
  ``prop-transformer-rank-init``, ``prop-transformer-rank-chance`` (elementary certainties of the run: the
  experiment-integrity rows): ``theorems``, ``head_extraction``, ``attention_heads`` and ``scale_sweep.scale_error``.
* Figures: ``figure_data.growth`` / ``budget`` / ``spectra`` / ``scale_svals`` / ``scale_srank`` / ``toy``, drawn by
  the torch-free ``figures`` functions of the same names.

Modules:

* ``model`` -- replica-batched ViT and char-GPT: ``Config``, forward pass, attention (eq. (1)), loss.
* ``initialization`` -- PyTorch-default / GPT-2 initialization with a per-replica scale (Section 5).
* ``attention_heads`` -- per-head ``W_K W_Q^T``, ``W_V W_O^T`` from fused weights, extraction check.
* ``spectra`` -- checkpointed singular values (and stable ranks) of the per-head matrices and their change.
* ``optimizer`` -- replica-batched Adam / SGD with momentum and the warmup + cosine schedule.
* ``training`` -- the batched training loop that checkpoints the attention weights.
* ``settings`` -- the two experiments' settings (dataclasses) and the ``tiny`` / ``paper`` presets.
* ``experiments`` -- the ViT and char-GPT experiments of the chapter (data, replicas and controls, spectra).
* ``teacher`` -- the teacher-student attention head (ours: full weights, small start), batched over seeds.
* ``switch_on`` -- the one-at-a-time statistic of the singular values of a learned change.
* ``budget`` -- the growth claims decided again at shorter budgets (the verdict against the budget).
* ``rank_growth`` -- claim (b) on a stable-rank curve: end of the early transient, growth from it, trend.
* ``low_rank`` -- claim (a): the low-rank threshold and ratio, and a reference (a change in a random direction).
* ``scale_sweep`` -- claim (c): the gap between the smallest and largest scale, its noise and control.
* ``summaries`` -- the scalar observables of the claims on the ViT and char-GPT runs.
* ``claims_table`` -- one empirical row per claim with its shuffled-label control, and the claims table's verdicts.
* ``head_extraction`` -- the extraction checks of eq. (1) on the trained ViT (sanity rows) and their control.
* ``theorems`` -- the measurements of the integrity rows (first step, Adam's bound, initialization, rank bound, chance).
* ``bugs`` -- the catalogue of realistic bugs that ``stagewise power`` runs through the chapter.
* ``figure_data`` -- what each figure plots, taken out of the results as arrays (the figures' data sidecars).
* ``figures`` -- the chapter's figures: pure render functions ``render(data, style)``, no torch.
* ``parameters`` -- the chapter's cross-parameter validator ``check_parameters`` and cost model ``expected_seconds``.
* ``reference`` -- plain one-model-at-a-time ``torch.optim`` loop the benchmark compares against.
"""
