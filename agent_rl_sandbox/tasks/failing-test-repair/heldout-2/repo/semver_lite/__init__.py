"""Version comparison."""
