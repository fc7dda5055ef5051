"""pingstat: a small utility package."""
