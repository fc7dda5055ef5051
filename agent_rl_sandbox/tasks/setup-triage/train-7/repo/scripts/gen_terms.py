"""Generate glossary/_generated.py (local only: reads nothing from the network)."""
from pathlib import Path

TABLE = {"name": "glossary", "size": 8}
Path(__file__).resolve().parent.parent.joinpath("glossary", "_generated.py").write_text(
    "TABLE = " + repr(TABLE) + "\n"
)
print("setup: generated the lookup table")
