"""wordcount: a small utility package."""
