"""Offline stand-in for installing from deps.lock.json: puts each locked version from vendor/ on
sys.path after checking its sha256 against the lock."""

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load() -> None:
    lock = json.loads((ROOT / "deps.lock.json").read_text())
    for name, entry in sorted(lock["packages"].items()):
        init = ROOT / "vendor" / f"{name}-{entry['version']}" / name / "__init__.py"
        if not init.is_file():
            raise ImportError(f"{name}=={entry['version']} from deps.lock.json is not in vendor/")
        actual = hashlib.sha256(init.read_bytes()).hexdigest()
        if actual != entry.get("sha256"):
            raise ImportError(f"hash mismatch for {name}=={entry['version']}: lock has {entry.get('sha256')}, vendor/ has {actual}")
        sys.path.insert(0, str(init.parent.parent))


_load()
