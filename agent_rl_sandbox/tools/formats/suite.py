"""The Port Daddy trajectory suite as an export of this store: the fields that carry the store's verdict.

A suite export (``trajectory_export`` / ``agent-rl-sandbox export suite``) gives every task the expectation
:data:`VERDICT_EXPECTATION` and every trajectory a :data:`STORE_VERDICT_KIND` artifact whose ``status`` is the
store's verdict (``passed``, ``failed``, ``unscored``), plus the store's score report under
:data:`STORE_SCORE_FIELD`. Port Daddy's own semantics then give each trajectory the store's pass/fail, so a
gate over the suite is the store's verdict. They count only in a suite whose export signature verifies
(:mod:`.signing`); ``score`` drops them from any other suite.
"""

from __future__ import annotations

from typing import Any

STORE_VERDICT_KIND = "store_verdict"
"""Artifact kind of a trajectory's store verdict."""
STORE_SCORE_FIELD = "storeScore"
"""Field of a suite trajectory holding the store's score report."""
VERDICT_EXPECTATION: dict[str, Any] = {"kind": STORE_VERDICT_KIND, "status": "passed"}
"""The ``expectedEvidence`` item every exported task carries."""


def verdict_artifact(session_id: str, passed: bool | None, reward: float | None) -> dict[str, Any]:
    """The artifact carrying one trajectory's store verdict."""
    verdict = "unscored" if passed is None else ("passed" if passed else "failed")
    return {
        "kind": STORE_VERDICT_KIND,
        "name": session_id,
        "status": verdict,
        "content": f"store verdict: {verdict}, reward {reward}",
    }
