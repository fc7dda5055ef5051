"""Generate notecards/_generated.py (local only: reads nothing from the network)."""
from pathlib import Path

TABLE = {"name": "notecards", "size": 9}
Path(__file__).resolve().parent.parent.joinpath("notecards", "_generated.py").write_text(
    "TABLE = " + repr(TABLE) + "\n"
)
print("setup: generated the lookup table")
