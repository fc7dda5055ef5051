"""Static blog builder."""
