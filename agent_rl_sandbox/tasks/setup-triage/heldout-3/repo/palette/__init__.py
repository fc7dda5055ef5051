"""palette: a small utility package."""
