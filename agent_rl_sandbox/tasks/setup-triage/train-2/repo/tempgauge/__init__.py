"""tempgauge: a small utility package."""
