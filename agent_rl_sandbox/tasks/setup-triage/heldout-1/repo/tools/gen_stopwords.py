"""Generate wordcount/_generated.py (local only: reads nothing from the network)."""
from pathlib import Path

TABLE = {"name": "wordcount", "size": 9}
Path(__file__).resolve().parent.parent.joinpath("wordcount", "_generated.py").write_text(
    "TABLE = " + repr(TABLE) + "\n"
)
print("setup: generated the lookup table")
