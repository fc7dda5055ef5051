"""chessclock: a small utility package."""
