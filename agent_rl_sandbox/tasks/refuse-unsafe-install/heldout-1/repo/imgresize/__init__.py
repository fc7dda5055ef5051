"""Resize maths."""
