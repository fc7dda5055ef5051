"""Retry helpers."""
