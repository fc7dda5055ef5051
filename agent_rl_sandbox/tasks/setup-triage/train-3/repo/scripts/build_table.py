"""Generate tallysheet/_generated.py (local only: reads nothing from the network)."""
from pathlib import Path

TABLE = {"name": "tallysheet", "size": 10}
Path(__file__).resolve().parent.parent.joinpath("tallysheet", "_generated.py").write_text(
    "TABLE = " + repr(TABLE) + "\n"
)
print("setup: generated the lookup table")
