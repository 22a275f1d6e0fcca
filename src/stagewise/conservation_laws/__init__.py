"""The conservation_laws chapter's code (being reorganised; see the chapter)."""
