"""timezones: a small utility package."""
