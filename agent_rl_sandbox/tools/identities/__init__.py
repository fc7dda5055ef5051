"""Identities and their quotas: who is calling the HTTP server, and how much it may do at once.

Public surface::

    IdentityRegistry(engine)      add(name, teams) -> (record, token shown once), list, get, revoke,
                                  verify(token) -> (record, Caller) | None
    IdentityRecord, IdentityError, hash_token, TOKEN_PREFIX
    Quotas(limits, engine)        open_sandbox / running_command / training_request (context managers),
                                  steps(caller, n); raise QuotaExceeded (limit, value, retry_after_s)
    QuotaLimits, QuotaExceeded, PENDING_JOB_STATES

Modules: ``_registry`` (the ``identities`` table: tokens stored as SHA-256, teams as explicit scopes)
and ``_quotas`` (per-identity limits from settings; what is counted in the database and what per
process).
"""

from agent_rl_sandbox.tools.identities._quotas import PENDING_JOB_STATES, QuotaExceeded, QuotaLimits, Quotas
from agent_rl_sandbox.tools.identities._registry import (
    TOKEN_PREFIX,
    IdentityError,
    IdentityRecord,
    IdentityRegistry,
    hash_token,
)

__all__ = [
    "PENDING_JOB_STATES",
    "TOKEN_PREFIX",
    "IdentityError",
    "IdentityRecord",
    "IdentityRegistry",
    "QuotaExceeded",
    "QuotaLimits",
    "Quotas",
    "hash_token",
]
