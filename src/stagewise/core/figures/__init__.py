"""Figures: how a run's results are drawn and taken away.

Owns figure export (PDF, SVG and PNG under one stem, with provenance: :mod:`.export`), the style presets and their
``.mplstyle`` sheets (:mod:`.styles`), a figure's data sidecar (:mod:`.sidecar`), render functions shared by
chapters (:mod:`.plots`) and the drawing behind ``stagewise figure`` (:mod:`.restyle`, outside the kernel).

May import: nothing else of ``stagewise.core``.
"""
