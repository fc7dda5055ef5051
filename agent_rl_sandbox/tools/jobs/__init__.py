"""Training jobs: the spec's canonical hash, the state machine, and (to come) the queue, approvals
and the worker's claims.

Public surface:

- :func:`canonical_spec`, :func:`spec_hash`: what a human's approval is bound to.
- :data:`TRANSITIONS`, :func:`allowed`, :func:`is_final`: the state machine and who may move it.
"""

from agent_rl_sandbox.tools.jobs._hash import canonical_spec, spec_hash
from agent_rl_sandbox.tools.jobs._states import TRANSITIONS, Actor, allowed, is_final

__all__ = ["TRANSITIONS", "Actor", "allowed", "canonical_spec", "is_final", "spec_hash"]
