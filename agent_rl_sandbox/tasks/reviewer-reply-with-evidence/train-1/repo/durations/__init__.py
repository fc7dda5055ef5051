"""Duration parsing."""
