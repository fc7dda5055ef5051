"""Commit statistics."""
