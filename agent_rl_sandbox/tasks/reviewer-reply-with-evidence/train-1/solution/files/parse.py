"""Parse ``"1h30m15s"``-style durations into seconds."""

import re

_PART = re.compile(r"(\d+)([hms])")
_UNIT = {"h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> int:
    total = 0
    for amount, unit in _PART.findall(text.strip().lower()):
        total += int(amount) * _UNIT[unit]
    return total
