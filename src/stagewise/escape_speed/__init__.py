"""The escape_speed chapter's code (being reorganised; see the chapter)."""
