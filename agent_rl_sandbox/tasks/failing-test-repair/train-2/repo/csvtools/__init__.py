"""CSV helpers."""
