"""notecards: a small utility package."""
