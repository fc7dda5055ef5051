"""Compile the hot modules with mypyc: the suite scorer's and the dataset validator's (``make install``).

For each module in :data:`MODULES` (the suite scorer's per-trajectory code ``tools/_suite_hot.py``, the
dataset validator's per-row fast path ``tools/datasets/_fast_hot.py``) builds ``<name>_c`` (a C extension,
gitignored) beside it from a copy of ``<name>.py`` that records the CRC-32 of the source it was made from
(``SOURCE_CRC``); ``agent_rl_sandbox.tools._compiled.load_hot`` loads the extension only when that matches
the ``<name>.py`` beside it, so an edit to the source never runs stale compiled code (it runs the pure
module until the next build). Optional by design: without mypyc or a C compiler, or when a build fails,
it prints why and exits 0 (the pure module is the same code, only slower). ``--check`` exits 1 instead of
0 on failure.

    python scripts/compile_scorer.py [--check] [NAME...]    # NAME: _suite_hot, _fast_hot (default: all)
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "agent_rl_sandbox" / "tools"
MODULES = {
    "_suite_hot": TOOLS / "_suite_hot.py",
    "_fast_hot": TOOLS / "datasets" / "_fast_hot.py",
}


def build(source: Path) -> str | None:
    """Build ``<source stem>_c`` beside ``source``; ``None`` on success, else why not."""
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "mypyc is not installed"
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        return "no C compiler"
    name = source.stem + "_c"
    data = source.read_bytes()
    copy = source.with_name(f"{name}.py")
    copy.write_bytes(data + f"\nSOURCE_CRC = {zlib.crc32(data)}\n".encode())
    try:
        with tempfile.TemporaryDirectory(prefix="mypyc-") as tmp:
            env = {**os.environ, "PYTHONPATH": str(ROOT), "MYPYC_OPT_LEVEL": "3"}
            cmd = [sys.executable, "-m", "mypyc", str(copy.relative_to(ROOT))]
            # mypyc writes its build directory and C files under the working directory's build/
            p = subprocess.run(cmd, cwd=ROOT, env={**env, "TMPDIR": tmp}, capture_output=True, text=True)
            if p.returncode != 0:
                return "mypyc failed: " + (p.stdout + p.stderr).strip()[-2000:]
        if not glob.glob(str(source.parent / f"{name}.*.so")) and not glob.glob(str(source.parent / f"{name}.*.pyd")):
            return "mypyc wrote no extension"
    finally:
        copy.unlink(missing_ok=True)
    return None


def main(argv: list[str]) -> int:
    names = [a for a in argv if not a.startswith("-")] or list(MODULES)
    failed = False
    for name in names:
        source = MODULES.get(name)
        if source is None:
            print(f"unknown module {name!r}; one of: {', '.join(MODULES)}", file=sys.stderr)
            return 2
        why = build(source)
        if why is None:
            print(f"compiled {source.relative_to(ROOT)} -> {name}_c (mypyc)")
            continue
        failed = True
        print(f"{source.relative_to(ROOT)} not compiled ({why}); its pure-Python module is used", file=sys.stderr)
    return 1 if failed and "--check" in argv else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
