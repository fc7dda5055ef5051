"""Offline stand-in for ``pip install -r requirements.lock``: puts each locked version from vendor/ on
sys.path after checking its sha256 against the lock."""

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"


def _load() -> None:
    for raw in LOCK.read_text().splitlines():
        line = raw.split("#")[0].strip()
        if not line:
            continue
        spec, _, digest = line.partition("--hash=sha256:")
        name, _, version = spec.strip().partition("==")
        init = ROOT / "vendor" / f"{name}-{version}" / name / "__init__.py"
        if not init.is_file():
            raise ImportError(f"{name}=={version} from requirements.lock is not in vendor/")
        actual = hashlib.sha256(init.read_bytes()).hexdigest()
        if actual != digest.strip():
            raise ImportError(f"hash mismatch for {name}=={version}: lock has {digest.strip() or 'none'}, vendor/ has {actual}")
        sys.path.insert(0, str(init.parent.parent))


_load()
