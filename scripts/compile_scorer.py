"""Compile the suite scorer's per-trajectory module with mypyc (``make install`` runs this).

Builds ``agent_rl_sandbox/tools/_suite_hot_c`` (a C extension, gitignored) from a copy of
``_suite_hot.py`` that records the CRC-32 of the source it was made from (``SOURCE_CRC``);
``tools._suite_fast`` loads the extension only when that matches the ``_suite_hot.py`` beside it, so
an edit to the source never runs stale compiled code (it runs the pure module until the next build).
Optional by design: without mypyc or a C compiler, or when the build fails, it prints why and exits
0 (the pure module is the same code, only slower). ``--check`` exits 1 instead of 0 on failure.

    python scripts/compile_scorer.py [--check]
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
SOURCE = TOOLS / "_suite_hot.py"
NAME = "_suite_hot_c"


def build() -> str | None:
    """Build the extension into ``TOOLS``; ``None`` on success, else why not."""
    try:
        import mypyc  # noqa: F401
    except ImportError:
        return "mypyc is not installed"
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        return "no C compiler"
    data = SOURCE.read_bytes()
    copy = TOOLS / f"{NAME}.py"
    copy.write_bytes(data + f"\nSOURCE_CRC = {zlib.crc32(data)}\n".encode())
    try:
        with tempfile.TemporaryDirectory(prefix="mypyc-") as tmp:
            env = {**os.environ, "PYTHONPATH": str(ROOT), "MYPYC_OPT_LEVEL": "3"}
            cmd = [sys.executable, "-m", "mypyc", str(copy.relative_to(ROOT))]
            # mypyc writes its build directory and C files under the working directory's build/
            p = subprocess.run(cmd, cwd=ROOT, env={**env, "TMPDIR": tmp}, capture_output=True, text=True)
            if p.returncode != 0:
                return "mypyc failed: " + (p.stdout + p.stderr).strip()[-2000:]
        if not glob.glob(str(TOOLS / f"{NAME}.*.so")) and not glob.glob(str(TOOLS / f"{NAME}.*.pyd")):
            return "mypyc wrote no extension"
    finally:
        copy.unlink(missing_ok=True)
    return None


def main(argv: list[str]) -> int:
    why = build()
    if why is None:
        print(f"compiled {SOURCE.relative_to(ROOT)} -> {NAME} (mypyc)")
        return 0
    print(f"not compiled ({why}); the pure-Python scorer is used", file=sys.stderr)
    return 1 if "--check" in argv else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
