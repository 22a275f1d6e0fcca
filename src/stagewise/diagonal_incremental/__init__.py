"""The diagonal_incremental chapter's code (being reorganised; see the chapter)."""
