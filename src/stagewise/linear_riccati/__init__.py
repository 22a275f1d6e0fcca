"""The linear_riccati chapter's code (being reorganised; see the chapter)."""
