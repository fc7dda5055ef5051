"""Generate palette/_generated.py (local only: reads nothing from the network)."""
from pathlib import Path

TABLE = {"name": "palette", "size": 7}
Path(__file__).resolve().parent.parent.joinpath("palette", "_generated.py").write_text(
    "TABLE = " + repr(TABLE) + "\n"
)
print("setup: generated the lookup table")
