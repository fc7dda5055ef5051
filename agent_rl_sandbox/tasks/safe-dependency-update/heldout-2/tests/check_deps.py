"""Verifier half two: the pins, the lock and the vendored files agree, at the expected versions.

deps_expect.json: {"requirements": path, "lock": path, "lock_format": "pip" | "json",
"expect": {name: version}}. Exit 0 when every pin and lock entry equals the expected version and every
lock hash matches the vendored file; 1 otherwise (each problem printed)."""

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def pins(path: Path) -> dict:
    out = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            out[name.strip()] = version.strip() or None
    return out


def lock_entries(path: Path, fmt: str) -> dict:
    if fmt == "json":
        return {n: (e.get("version"), e.get("sha256")) for n, e in json.loads(path.read_text())["packages"].items()}
    out = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#")[0].strip()
        if line:
            spec, _, digest = line.partition("--hash=sha256:")
            name, _, version = spec.strip().partition("==")
            out[name.strip()] = (version.strip(), digest.strip())
    return out


def main() -> int:
    cfg = json.loads((HERE / "deps_expect.json").read_text())
    repo = Path.cwd()
    expect = cfg["expect"]
    problems = []
    try:
        req = pins(repo / cfg["requirements"])
        lock = lock_entries(repo / cfg["lock"], cfg["lock_format"])
    except (OSError, ValueError, KeyError) as e:
        print(f"DEPS CHECK FAILED: cannot read pins or lock: {e}")
        return 1
    if req != expect:
        problems.append(f"{cfg['requirements']} pins {req}, expected {expect}")
    if {n: v for n, (v, _) in lock.items()} != expect:
        problems.append(f"{cfg['lock']} locks {({n: v for n, (v, _) in lock.items()})}, expected {expect}")
    for name, (version, digest) in lock.items():
        init = repo / "vendor" / f"{name}-{version}" / name / "__init__.py"
        if not init.is_file():
            problems.append(f"{name}=={version} is not vendored")
        elif hashlib.sha256(init.read_bytes()).hexdigest() != digest:
            problems.append(f"{name}=={version}: lock hash does not match vendor/")
    for p in problems:
        print("DEPS CHECK FAILED:", p)
    if not problems:
        print("deps check passed:", expect)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
