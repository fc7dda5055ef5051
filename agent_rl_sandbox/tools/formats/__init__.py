"""Interchange formats: one reader and writer per format, shared by import, export, validate and score.

Public surface::

    content_text                    the text of a message content (string or list of parts), one rule
    atif.read_document, AtifDocument, AtifIssue, integrity_issues, is_atif    the ATIF reader and its rules
    atif.write_document, AtifIntegrityError                                   the ATIF writer
    atif.step_provenance            the trust rule: a file's provenance is a claim unless it is a verified export
    signing.export_key, sign, verify, Verification                            export signatures (HMAC-SHA256)
    suite.STORE_VERDICT_KIND, verdict_artifact                                 a suite export's store verdicts

Imports only ``schemas/`` and ``tools.errors`` (no store, no sandbox), so every part of ``tools/`` can use
it. ``content_text`` is imported eagerly and pulls in nothing (the Claude Code hook must start fast); the
rest loads on first use.
"""

from agent_rl_sandbox.tools.formats._content import content_text

_LAZY = {
    "AtifDocument": "agent_rl_sandbox.tools.formats.atif",
    "AtifIntegrityError": "agent_rl_sandbox.tools.formats.atif",
    "AtifIssue": "agent_rl_sandbox.tools.formats.atif",
    "integrity_issues": "agent_rl_sandbox.tools.formats.atif",
    "is_atif": "agent_rl_sandbox.tools.formats.atif",
    "read_document": "agent_rl_sandbox.tools.formats.atif",
    "step_provenance": "agent_rl_sandbox.tools.formats.atif",
    "write_document": "agent_rl_sandbox.tools.formats.atif",
    "Verification": "agent_rl_sandbox.tools.formats.signing",
    "export_key": "agent_rl_sandbox.tools.formats.signing",
    "sign": "agent_rl_sandbox.tools.formats.signing",
    "verify": "agent_rl_sandbox.tools.formats.signing",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AtifDocument",
    "AtifIntegrityError",
    "AtifIssue",
    "Verification",
    "content_text",
    "export_key",
    "integrity_issues",
    "is_atif",
    "read_document",
    "sign",
    "step_provenance",
    "verify",
    "write_document",
]
