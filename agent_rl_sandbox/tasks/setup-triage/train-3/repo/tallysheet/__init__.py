"""tallysheet: a small utility package."""
