"""Code of the chapter "Gradual rank increase in real transformers" (book/chapters/transformer-rank.md).

The chapter repeats the experiments of Boix-Adsera et al., *Transformers learn through gradual
rank increase* (NeurIPS 2023), Section 5 and Appendix B, offline and small: a vision
transformer on the digits (Adam at several initialization scales and SGD, all replicas in one
batched computation) and a character-level GPT on CPython's help texts; it follows the stable
rank of the change of each head's ``W_K W_Q^T`` and ``W_V W_O^T`` during training.

Statements of the chapter and the code that implements them:

* ``def-transformer-rank-srank`` (Definition, stable rank ``||W||_F^2 / ||W||_2^2``):
  ``spectra.Spectra.srank`` (via the shared ``stagewise.numerics.spectra.stable_rank_from_svals``).
* ``prop-transformer-rank-bound`` (Proposition, rank of the per-head matrices <= d_h, change
  <= 2 d_h): ``attention_heads.head_matrices`` (paper eq. (1)), ``spectra.checkpoint_spectra``
  (difference of products); checked by ``attention_heads.extraction_error``,
  ``attention_heads.attention_output_error``, ``attention_heads.rank_tail`` and
  ``head_extraction.extraction_checks``.
* ``thm-transformer-rank-incremental`` (Theorem 4.1 of the paper, informal; additions only, at most one head in one
  layer gains rank per stage): context only, not simulated with diagonal weights here (see the diagonal-incremental
  chapter); ``teacher`` runs the full-weight analogue of its Figure 2.
* ``prop-transformer-rank-first-step``, ``prop-transformer-rank-adam-bound``, ``prop-transformer-rank-init``,
  ``prop-transformer-rank-chance`` (the elementary certainties of the run: Adam's and SGD's first step from the
  recorded initialization, Adam's step bound at the end of the schedule, the initialization's mean squares, the
  chance level of a model that did not learn), and ``prop-transformer-rank-bound`` on the measured spectra: the
  chapter's theorem rows, measured by ``theorems``.
* ``asm-transformer-rank-claims`` (the empirical claims (a)-(c) of Section 5 / Appendix B):
  ``experiments.run_vit`` (claims (a)-(c)), ``experiments.run_gpt`` (claim (b), GPT-2),
  ``summaries.summarize_vit`` / ``summarize_gpt``, ``rank_growth.growth_stats`` / ``transient_end`` and
  ``scale_sweep.scale_gap`` (the observables), ``rank_growth.trend`` (claim (b): least-squares trend over all
  checkpoints after step 0, with an interval from the checkpoint scatter), ``claims_table.claim_rows`` /
  ``claim_verdict`` (one empirical row per claim with its computed control, and the claims table's verdict read
  from it), ``low_rank.random_change_ratio`` and ``scale_sweep.twin_gap`` (controls of the low-rank and scale
  rows), ``scale_sweep.scale_error`` (sanity row of the scaled replicas), ``teacher.run_toy`` /
  ``seed_interval`` / ``per_seed_trend`` / ``toy_rows`` (claims (b) and (c) in the teacher-student regime where
  the rank must grow, judged across seeds; paper App. A, Fig 2),
  ``figure_data.spectra`` / ``srank`` / ``scale_svals`` / ``scale_srank`` / ``gpt`` / ``toy`` (what each figure
  plots, as arrays) drawn by the torch-free ``figures.spectra`` / ``srank`` / ``scale_svals`` / ``scale_srank`` /
  ``gpt`` / ``toy``.

Modules:

* ``model`` -- replica-batched ViT and char-GPT: ``Config``, forward pass, attention (eq. (1)), loss.
* ``initialization`` -- PyTorch-default / GPT-2 initialization with a per-replica scale (Section 5).
* ``attention_heads`` -- per-head ``W_K W_Q^T``, ``W_V W_O^T`` from fused weights, extraction check.
* ``spectra`` -- checkpointed singular values (and stable ranks) of the per-head matrices and their change.
* ``optimizer`` -- replica-batched Adam / SGD with momentum and the warmup + cosine schedule.
* ``training`` -- the batched training loop that checkpoints the attention weights.
* ``settings`` -- the two experiments' settings (dataclasses) and the ``tiny`` / ``paper`` presets.
* ``experiments`` -- the ViT and char-GPT experiments of the chapter (data, replicas, spectra).
* ``teacher`` -- the teacher-student attention head (full weights, small start), batched over seeds.
* ``rank_growth`` -- claim (b) on a stable-rank curve: end of the early transient, growth from it, trend.
* ``low_rank`` -- claim (a): the low-rank threshold and its control (a change in a random direction).
* ``scale_sweep`` -- claim (c): the gap between the smallest and largest scale, its twin control, the scale row.
* ``summaries`` -- the scalar observables of the claims on the ViT and char-GPT runs.
* ``claims_table`` -- one empirical row per claim with its control, and the claims table's verdicts.
* ``head_extraction`` -- the extraction checks of eq. (1) on the trained ViT (sanity rows) and their control.
* ``theorems`` -- the measurements of the theorem rows (first step, Adam's bound, initialization, rank bound, chance).
* ``bugs`` -- the catalogue of realistic bugs that ``stagewise power`` runs through the chapter.
* ``figure_data`` -- what each figure plots, taken out of the results as arrays (the figures' data sidecars).
* ``figures`` -- the chapter's figures: pure render functions ``render(data, style)``, no torch.
* ``parameters`` -- the chapter's cross-parameter validator ``check_parameters`` and cost model ``expected_seconds``.
* ``reference`` -- plain one-model-at-a-time ``torch.optim`` loop the benchmark compares against.
"""
