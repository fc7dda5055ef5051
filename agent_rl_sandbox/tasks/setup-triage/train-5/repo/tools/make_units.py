"""Generate unitmap/_generated.py (local only: reads nothing from the network)."""
from pathlib import Path

TABLE = {"name": "unitmap", "size": 7}
Path(__file__).resolve().parent.parent.joinpath("unitmap", "_generated.py").write_text(
    "TABLE = " + repr(TABLE) + "\n"
)
print("setup: generated the lookup table")
