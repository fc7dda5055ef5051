"""Verifier half two: claims preceded edits and edits stayed inside claimed paths.

Reads ACTIONS_FILE, written by the server from its own records (never by the agent):
{"claims": [{"step_id": int, "paths": [str]}], "edits": [{"step_id": int, "paths": [str]}],
 "changed_paths": [str]}.  Exit 0 when both hold, 1 otherwise.
"""

import json
import sys


def covered(path, claims):
    for c in claims:
        c = c.rstrip("/")
        if c in ("", ".") or path == c or path.startswith(c + "/"):
            return True
    return False


def main(path):
    with open(path, encoding="utf-8") as f:
        actions = json.load(f)
    problems = []
    for edit in actions["edits"]:
        earlier = [p for c in actions["claims"] if c["step_id"] < edit["step_id"] for p in c["paths"]]
        problems += [f"step {edit['step_id']}: {p} edited before it was claimed" for p in edit["paths"] if not covered(p, earlier)]
    every_claim = [p for c in actions["claims"] for p in c["paths"]]
    problems += [f"{p} changed but never claimed" for p in actions["changed_paths"] if not covered(p, every_claim)]
    for p in problems:
        print("CLAIM CHECK FAILED:", p)
    if not problems:
        print("claim check passed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
