"""quotebook: a small utility package."""
