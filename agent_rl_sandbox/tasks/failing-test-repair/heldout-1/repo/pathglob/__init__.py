"""Glob matching for ignore files."""
