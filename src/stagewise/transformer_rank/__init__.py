"""The transformer_rank chapter's code (being reorganised; see the chapter)."""
