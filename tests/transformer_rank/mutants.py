"""Deliberately broken package functions for the transformer-rank mutation test (not a test module).

Each is put in place of a package function inside the chapter's kernel through
``STAGEWISE_MUTATION`` (see ``stagewise.core.mutation``); the strict run must then fail.
"""


def scales_ignored(cfg, scales, rng, device="cpu", original=None):
    """Initialization that ignores the per-replica scale: every replica starts at the default scale."""
    return original(cfg, [1.0] * len(scales), rng, device)

