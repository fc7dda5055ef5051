"""Docs helpers."""
