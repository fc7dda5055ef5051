"""logtail: a small utility package."""
