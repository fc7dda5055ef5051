"""Built-in task fixtures (data folders; each task is a folder holding task.toml)."""
