"""Status page."""
