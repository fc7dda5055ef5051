"""unitmap: a small utility package."""
