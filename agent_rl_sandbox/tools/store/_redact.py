"""Secret redaction: every string that reaches the store or an export passes through :class:`Redactor`.

Detection uses **detect-secrets** (Yelp's maintained detector set, package ``detect-secrets``): its
regex-based plugins for provider keys and tokens (AWS, GitHub, GitLab, Slack, Stripe, OpenAI legacy keys,
npm, PyPI, SendGrid, Twilio, Discord, Telegram, JWTs, ...), ``BasicAuthDetector`` (passwords in URLs,
``scheme://user:password@host``), ``PrivateKeyDetector`` (PEM/OpenSSH/PGP/PuTTY private keys) and
``KeywordDetector`` (quoted assignments to ``password``/``secret``/``api_key``/``token``-like names).
The plugins' own patterns and validity checks (e.g. the JWT well-formedness check) decide what a secret
is; this module only finds *where* each match is so the text around it survives.

Deliberately not used: the high-entropy string plugins (they flag git object ids, tree hashes and UUIDs,
which trajectories are full of) and ``IPPublicDetector`` (an address is not a credential).

A few patterns detect-secrets has no plugin for are added in :data:`EXTRA_PATTERNS`, each documented
with the token format it matches. A private key's detector matches only the ``BEGIN ... PRIVATE KEY``
header line, so the whole armoured block (to its ``END`` line, or to the end of the text when the block
was cut) is replaced.

Each secret becomes ``[REDACTED:<type>]`` where ``<type>`` is a slug of the detector's secret type
(``basic-auth-credentials``, ``private-key``, ``github-token``, ...). Counts per type are returned so
importers and loggers can report them. Text that is already a marker is never matched again, so
redaction is idempotent.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

MARKER_PREFIX = "[REDACTED:"

EXTRA_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # Anthropic API keys: "sk-ant-" then a key kind ("api03", "admin01", ...) and a long url-safe body.
    ("anthropic-api-key", re.compile(r"\bsk-ant-[A-Za-z0-9]+-[A-Za-z0-9_\-]{32,}")),
    # OpenAI keys in the current formats (project, service-account, admin, user keys without the legacy
    # "T3BlbkFJ" marker that detect-secrets' OpenAIDetector requires): "sk-proj-...", "sk-svcacct-...",
    # "sk-admin-...", or "sk-" followed by 40+ url-safe characters.
    ("openai-api-key", re.compile(r"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}|\bsk-[A-Za-z0-9]{40,}\b")),
    # Hugging Face user access tokens: "hf_" + 34 or more letters/digits.
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{34,}\b")),
    # Google API keys: "AIza" + 35 url-safe characters (fixed length 39).
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    # Passwords in URLs that contain RFC 3986 sub-delimiters (!$&'()*+,;=): allowed in userinfo, but
    # detect-secrets' BasicAuthDetector stops at them (scheme://user:pa$$!word@host). The group is the password.
    ("basic-auth-credentials", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/?#\[\]@]+:([^\s/?#\[\]@]+)@")),
    # Bearer tokens in HTTP Authorization headers (curl -H "Authorization: Bearer ..."): the token part.
    ("bearer-token", re.compile(r"\bauthorization:\s*bearer\s+([A-Za-z0-9._~+/\-]{16,}=*)", re.IGNORECASE)),
)
"""(type, pattern) for secrets detect-secrets 1.5 has no plugin for. A pattern with a capture group
redacts the group only; otherwise the whole match."""

_PEM_BLOCK = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)
_PUTTY_BLOCK = re.compile(r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[^\n]*|\Z)", re.DOTALL)
_EDGE_DELIMS = " \t\r\n=:\"'"
_JWT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=.")
_SCALARS = frozenset({int, float, bool})
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_ASSIGNMENT_PREFIX = r"(?:(?<=\W)|(?<=^))"
_KEYWORD_GATE = re.compile(r"key|pw|pass|token|secret|contrase", re.IGNORECASE)
"""Every keyword-assignment pattern (detect-secrets' ``build_assignment_regex`` and ``KeywordDetector``)
needs one of these words; text without any skips those (slowest) patterns."""
_QUOTES = ("'", '"', "`")
"""detect-secrets' ``QUOTE`` class: each ``KeywordDetector`` quotes-required pattern holds a group of it at
its top level, unquantified, so it cannot match text without one of these characters (checked per pattern
by :func:`_requires_quote` when the redactor is built; a pattern without it is only keyword-gated)."""
_NO_GATE, _KEYWORD, _KEYWORD_AND_QUOTE = 0, 1, 2

_PLUGIN_CLASSES: tuple[tuple[str, str], ...] = (
    ("detect_secrets.plugins.artifactory", "ArtifactoryDetector"),
    ("detect_secrets.plugins.aws", "AWSKeyDetector"),
    ("detect_secrets.plugins.azure_storage_key", "AzureStorageKeyDetector"),
    ("detect_secrets.plugins.basic_auth", "BasicAuthDetector"),
    ("detect_secrets.plugins.cloudant", "CloudantDetector"),
    ("detect_secrets.plugins.discord", "DiscordBotTokenDetector"),
    ("detect_secrets.plugins.github_token", "GitHubTokenDetector"),
    ("detect_secrets.plugins.gitlab_token", "GitLabTokenDetector"),
    ("detect_secrets.plugins.ibm_cloud_iam", "IbmCloudIamDetector"),
    ("detect_secrets.plugins.ibm_cos_hmac", "IbmCosHmacDetector"),
    ("detect_secrets.plugins.jwt", "JwtTokenDetector"),
    ("detect_secrets.plugins.mailchimp", "MailchimpDetector"),
    ("detect_secrets.plugins.npm", "NpmDetector"),
    ("detect_secrets.plugins.openai", "OpenAIDetector"),
    ("detect_secrets.plugins.private_key", "PrivateKeyDetector"),
    ("detect_secrets.plugins.pypi_token", "PypiTokenDetector"),
    ("detect_secrets.plugins.sendgrid", "SendGridDetector"),
    ("detect_secrets.plugins.slack", "SlackDetector"),
    ("detect_secrets.plugins.softlayer", "SoftlayerDetector"),
    ("detect_secrets.plugins.square_oauth", "SquareOAuthDetector"),
    ("detect_secrets.plugins.stripe", "StripeDetector"),
    ("detect_secrets.plugins.telegram_token", "TelegramBotTokenDetector"),
    ("detect_secrets.plugins.twilio", "TwilioKeyDetector"),
    ("detect_secrets.plugins.keyword", "KeywordDetector"),
)
"""The detect-secrets plugins in use (module, class)."""

SKIP_KEYS = frozenset(
    {
        "step_id",
        "timestamp",
        "state_ref",
        "client_step_id",
        "tool_call_id",
        "source_call_id",
        "provenance",
        "outcome",
        "source",
        "function_name",
        "type",
        "role",
        "id",
        "call_id",
        "tool_use_id",
    }
)
"""Keys whose values are identifiers or enums, never free text: not scanned (faster, and an id that happens
to look like a token is not mangled)."""


def _requires_quote(rx: re.Pattern[str]) -> bool:
    """Whether every match of ``rx`` contains a quote character: its parsed top-level sequence (the
    stdlib's own parser, ``re._parser``) holds a group matching exactly one of :data:`_QUOTES`, with
    no quantifier or alternation around it. Conservative: anything else, or a parser change, is False."""
    try:
        from re import _parser  # type: ignore[attr-defined]

        quotes = {(_parser.LITERAL, ord(q)) for q in _QUOTES}
        for op, av in _parser.parse(rx.pattern, rx.flags & ~re.IGNORECASE):
            if op is _parser.SUBPATTERN:
                inner = list(av[-1])
                if len(inner) == 1 and inner[0][0] is _parser.IN and set(inner[0][1]) == quotes:
                    return True
        return False
    except Exception:  # noqa: BLE001 - no proof, no shortcut
        return False


def _min_width(rx: re.Pattern[str]) -> int:
    """The fewest characters any match of ``rx`` spans (the stdlib parser's own lower bound, which counts
    lookarounds and anchors as zero): a text shorter than that cannot hold a match. 0 (no shortcut) when
    the parser cannot say."""
    try:
        from re import _parser  # type: ignore[attr-defined]

        return int(_parser.parse(rx.pattern, rx.flags).getwidth()[0])
    except Exception:  # noqa: BLE001 - no proof, no shortcut
        return 0


def slug(secret_type: str) -> str:
    """``'Basic Auth Credentials'`` -> ``'basic-auth-credentials'``."""
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def marker(kind: str) -> str:
    """The replacement text for a secret of type ``kind`` (a slug)."""
    return f"{MARKER_PREFIX}{kind}]"


class Redactor:
    """Finds and replaces secrets in strings and in JSON-like values.

    Construction imports detect-secrets and builds the detector list (about 0.1 s, once per process).
    Methods are pure and thread-safe. Never raises on any string.
    """

    def __init__(self, *, prefilter: bool = True) -> None:
        """``prefilter=False`` runs every pattern on every string (the reference the tests hold the
        pre-filtered redactor to)."""
        import importlib

        self._prefilter = prefilter
        self._detectors: list[tuple[str, list[tuple[re.Pattern[str], int | None, int]], Any]] = []
        for module_name, class_name in _PLUGIN_CLASSES:
            cls = getattr(importlib.import_module(module_name), class_name)
            kind = slug(cls.secret_type)
            if class_name == "PrivateKeyDetector":
                continue  # its patterns match the header line only: whole blocks are handled below
            pats: list[tuple[re.Pattern[str], int | None, int]]
            if class_name == "KeywordDetector":
                from detect_secrets.plugins.keyword import QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP

                pats = [
                    (rx, group, _KEYWORD_AND_QUOTE if _requires_quote(rx) else _KEYWORD)
                    for rx, group in QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items()
                ]
            else:
                # The secret is the whole match, except in BasicAuth's pattern, whose group is the password
                # (user and host stay readable). Groups elsewhere mark prefixes such as GitHub's "ghp".
                group = 1 if class_name == "BasicAuthDetector" else None
                pats = [
                    (rx, group, _KEYWORD if rx.pattern.startswith(_ASSIGNMENT_PREFIX) else _NO_GATE)
                    for rx in cls().denylist
                ]
            check = getattr(cls, "is_formally_valid", None)  # JwtTokenDetector's well-formedness check
            self._detectors.append((kind, pats, check))
        for kind, rx in EXTRA_PATTERNS:
            self._detectors.append((kind, [(rx, 1 if rx.groups else None, _NO_GATE)], None))
        self._detectors.append(("private-key", [(_PEM_BLOCK, None, _NO_GATE), (_PUTTY_BLOCK, None, _NO_GATE)], None))
        self._flat = [
            (rx, group, needs, kind, check) for kind, pats, check in self._detectors for rx, group, needs in pats
        ]
        widths = [_min_width(rx) for rx, *_ in self._flat]
        self._by_length = [
            [p for p, w in zip(self._flat, widths, strict=True) if w <= n] for n in range(max(widths) + 1)
        ]
        """``_by_length[n]``: the patterns (in :attr:`_flat`'s order) that can match within a text of ``n``
        characters (:func:`_min_width` at most ``n``); a text at least as long as the widest takes all."""

    # -- strings -------------------------------------------------------------------------------
    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        spans: list[tuple[int, int, str]] = []
        # Preconditions no match can lack (see _KEYWORD_GATE, _QUOTES): the level a pattern needs
        # is above what the text offers, so its search would find nothing.
        offers = _NO_GATE if self._prefilter else _KEYWORD_AND_QUOTE
        if offers is _NO_GATE and _KEYWORD_GATE.search(text) is not None:
            offers = _KEYWORD_AND_QUOTE if any(q in text for q in _QUOTES) else _KEYWORD
        n = len(text)
        flat = self._by_length[n] if self._prefilter and n < len(self._by_length) else self._flat
        for rx, group, needs, kind, check in flat:
            if needs > offers:
                continue
            first = rx.search(text)
            if first is None:
                continue
            for m in rx.finditer(text, first.start()):
                if group is not None and (m.re.groups < group or m.group(group) is None):
                    continue
                start, end = m.span(group or 0)
                if group is None:
                    # A token runs to its last token character: JWT's pattern stops before the
                    # signature, and fixed-length patterns would leave the tail of a longer token.
                    chars = _JWT_CHARS if kind == "json-web-token" else _TOKEN_CHARS
                    while end < n and text[end] in chars:
                        end += 1
                # Patterns that anchor on a delimiter (Artifactory's `(?:\s|=|:|"|^)`) include it.
                while start < end and text[start] in _EDGE_DELIMS:
                    start += 1
                while end > start and text[end - 1] in _EDGE_DELIMS:
                    end -= 1
                if end <= start:
                    continue
                value = text[start:end]
                if MARKER_PREFIX in value:
                    continue
                if check is not None and not check(value):
                    continue
                spans.append((start, end, kind))
        return spans

    def text(self, text: str) -> tuple[str, Counter[str]]:
        """``text`` with every secret replaced by its marker, and the count of secrets per type."""
        counts: Counter[str] = Counter()
        if not text or len(text) < 8:
            return text, counts
        spans = self._spans(text)
        if not spans:
            return text, counts
        # Longest first at equal starts, then drop spans inside an already kept span.
        spans.sort(key=lambda s: (s[0], -(s[1] - s[0])))
        kept: list[tuple[int, int, str]] = []
        for s in spans:
            if kept and s[0] < kept[-1][1]:
                if s[1] > kept[-1][1]:  # overlapping: extend the kept span
                    kept[-1] = (kept[-1][0], s[1], kept[-1][2])
                continue
            kept.append(s)
        out: list[str] = []
        pos = 0
        for start, end, kind in kept:
            out.append(text[pos:start])
            out.append(marker(kind))
            counts[kind] += 1
            pos = end
        out.append(text[pos:])
        return "".join(out), counts

    def value(self, value: Any, counts: Counter[str] | None = None) -> tuple[Any, Counter[str]]:
        """A copy of a JSON-like value with secrets in its strings replaced (dict keys in
        :data:`SKIP_KEYS` are left alone). Returns the value and the counts per type."""
        counts = Counter() if counts is None else counts
        return self._walk(value, counts), counts

    def _walk(self, value: Any, counts: Counter[str]) -> Any:
        if isinstance(value, str):
            if len(value) < 8:
                return value
            new, c = self.text(value)
            if c:
                counts.update(c)
            return new
        if isinstance(value, dict):
            return {
                k: (v if k in SKIP_KEYS or v is None or v.__class__ in _SCALARS else self._walk(v, counts))
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [v if v.__class__ in _SCALARS else self._walk(v, counts) for v in value]
        return value
