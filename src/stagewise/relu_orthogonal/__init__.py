"""The relu_orthogonal chapter's code (being reorganised; see the chapter)."""
