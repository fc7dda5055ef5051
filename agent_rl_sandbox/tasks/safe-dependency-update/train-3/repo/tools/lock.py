"""Regenerate requirements.lock from the exact pins in requirements.txt (offline: hashes come from vendor/)."""

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    out = []
    for raw in (ROOT / "requirements.txt").read_text().splitlines():
        line = raw.split("#")[0].strip()
        if not line:
            continue
        name, _, version = line.partition("==")
        if not version:
            print(f"{line!r}: pin an exact version (name==x.y.z)", file=sys.stderr)
            return 1
        init = ROOT / "vendor" / f"{name}-{version}" / name / "__init__.py"
        if not init.is_file():
            print(f"{name}=={version} is not available in vendor/", file=sys.stderr)
            return 1
        out.append(f"{name}=={version} --hash=sha256:{hashlib.sha256(init.read_bytes()).hexdigest()}")
    (ROOT / "requirements.lock").write_text("\n".join(sorted(out)) + "\n")
    print(f"locked {len(out)} package(s) into requirements.lock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
