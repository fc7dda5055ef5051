"""Forecast summaries."""
