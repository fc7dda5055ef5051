"""Money formatting."""
