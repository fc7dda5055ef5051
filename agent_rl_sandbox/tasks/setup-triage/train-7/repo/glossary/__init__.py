"""glossary: a small utility package."""
