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

Bulk callers (importers) go through :meth:`Redactor.value_screened`: one screen of all the strings of a
value together rules out, per pattern, what cannot match in any of them (a literal or character-class run
every match contains is absent, or the pattern itself finds nothing where it provably would; see
:func:`_requirements`, :func:`_mandatory_runs` and :func:`_escape_safe`), and only the patterns left run
on each string, so its output is always :meth:`Redactor.value`'s.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
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
_KEYWORD_GATE_WORDS = ("key", "pw", "pass", "token", "secret", "contrase")
""":data:`_KEYWORD_GATE`'s words, for a lower-cased ASCII text (where ``in`` and the regex agree)."""
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


_ESCAPED = frozenset(range(0x20)) | {0x22, 0x5C}
"""Code points a JSON encoder writes escaped inside a string (controls, ``"``, ``\\``). The screen's literals,
runs and whole-pattern searches never involve them, so they hold on a value's strings joined with newlines
(what :meth:`Redactor.screen` reads) and would hold on its JSON text too."""
_PROBE_ORDER = " etaoinsrhl.,-_:/dcumfpgwybv0123456789\"'()=kxjqzETAOINSRHLDCUMFPGWYBVKXJQZ"
"""Characters from common to rare in trajectory text (a guess that only orders checks: any order is
correct); a literal is first probed for its rarest character."""
_Alt = tuple[str, bool]
"""A literal every match may contain, and whether it matches case-insensitively (then lower-cased)."""


def _rank(ch: str) -> int:
    i = _PROBE_ORDER.find(ch)
    return len(_PROBE_ORDER) if i < 0 else i


def _requirements(items: Any, icase: bool) -> list[tuple[_Alt, ...]]:
    """Necessary conditions of a parsed pattern (``re._parser`` items): each entry is a set of literals of
    which every match contains at least one. From runs of literal characters (only ones a JSON encoder
    never escapes) at the top level, inside groups, repeats of at least one, and alternations whose every
    branch has one. Lookarounds, optional parts and classes give nothing (fewer conditions, never a wrong
    one)."""
    from re import _constants as c  # type: ignore[attr-defined]

    out: list[tuple[_Alt, ...]] = []
    run: list[str] = []

    def close() -> None:
        if run:
            text = "".join(run)
            out.append(((text.lower() if icase else text, icase),))
            run.clear()

    for op, av in items:
        if op is c.LITERAL and av not in _ESCAPED and av < 0x7F:
            run.append(chr(av))
            continue
        close()
        if op is c.SUBPATTERN:
            _group, add, delete, sub = av
            out.extend(_requirements(sub, (icase or bool(add & re.IGNORECASE)) and not delete & re.IGNORECASE))
        elif op is c.ATOMIC_GROUP:
            out.extend(_requirements(av, icase))
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) and av[0] >= 1:
            out.extend(_requirements(av[2], icase))
        elif op is c.BRANCH:
            alts: list[_Alt] = []
            for branch in av[1]:
                reqs = _requirements(branch, icase)
                if not reqs:
                    break
                alts.extend(max(reqs, key=lambda r: min(len(t) for t, _ in r)))
            else:
                out.append(tuple(dict.fromkeys(alts)))
    close()
    return out


def _escape_safe(items: Any) -> bool:
    """Whether every match of a parsed pattern is a run of characters outside :data:`_ESCAPED`, decided
    without context (no anchor, boundary or lookaround): then a match inside one string is a match in the
    strings joined with newlines, and a pattern that finds nothing in that text finds nothing in any of
    them. Conservative: anything not understood is unsafe."""
    from re import _constants as c  # type: ignore[attr-defined]

    safe_categories = (c.CATEGORY_DIGIT, c.CATEGORY_WORD)
    for op, av in items:
        if op is c.LITERAL:
            if av in _ESCAPED:
                return False
        elif op is c.IN:
            for iop, iav in av:
                if iop is c.LITERAL:
                    if iav in _ESCAPED:
                        return False
                elif iop is c.RANGE:
                    lo, hi = iav
                    if lo < 0x20 or any(lo <= e <= hi for e in (0x22, 0x5C)):
                        return False
                elif iop is c.CATEGORY:
                    if iav not in safe_categories:
                        return False
                else:  # NEGATE and anything else
                    return False
        elif op is c.SUBPATTERN:
            if not _escape_safe(av[3]):
                return False
        elif op is c.ATOMIC_GROUP:
            if not _escape_safe(av):
                return False
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            if not _escape_safe(av[2]):
                return False
        elif op is c.BRANCH:
            if not all(_escape_safe(b) for b in av[1]):
                return False
        else:
            return False
    return True


def _mandatory_runs(items: Any, flags: int) -> list[tuple[bytes, int]]:
    """The character-class runs every match of a parsed pattern contains: top-level (or top-level group)
    repeats of at least :data:`_RUN_MIN` of one escape-safe class (the 20-64 character body of a token, the
    secret value of a keyword assignment), each as a byte translation table (1 for a byte of a character
    the class may match; every byte of a non-ASCII character when the class may match one) and the run
    length. A run of ``n`` such characters in a string is a run of at least ``n`` marked bytes in the UTF-8
    of any text containing the string."""
    from re import _constants as c  # type: ignore[attr-defined]

    out: list[tuple[bytes, int]] = []
    for op, av in items:
        if op is c.SUBPATTERN and not av[1] and not av[2]:
            out.extend(_mandatory_runs(av[3], flags))
        elif op is c.MAX_REPEAT and av[0] >= _RUN_MIN and _escape_safe([(op, av)]):
            body = list(av[2])
            if len(body) == 1 and body[0][0] is c.IN:
                out.append((_class_table(body[0][1], flags), av[0]))
    return out


_RUN_MIN = 16
"""Shortest repeat :func:`_mandatory_runs` keeps (shorter runs are everywhere in text)."""


def _class_table(items: Any, flags: int) -> bytes:
    """``bytes.translate`` table of a parsed character class (see :func:`_mandatory_runs`): ASCII bytes by
    ``re`` itself, non-ASCII bytes marked unless the class is plain ASCII literals and ranges matched
    case-sensitively."""
    from re import _constants as c  # type: ignore[attr-defined]

    parts, ascii_only = [], not flags & re.IGNORECASE
    for iop, iav in items:
        if iop is c.LITERAL:
            parts.append(re.escape(chr(iav)))
            ascii_only = ascii_only and iav < 0x80
        elif iop is c.RANGE:
            parts.append(f"{re.escape(chr(iav[0]))}-{re.escape(chr(iav[1]))}")
            ascii_only = ascii_only and iav[1] < 0x80
        elif iop is c.CATEGORY and iav is c.CATEGORY_DIGIT:
            parts.append(r"\d")
            ascii_only = False
        elif iop is c.CATEGORY and iav is c.CATEGORY_WORD:
            parts.append(r"\w")
            ascii_only = False
        else:
            raise ValueError("not an escape-safe class")
    cls = re.compile(f"[{''.join(parts)}]", flags & (re.IGNORECASE | re.ASCII))
    return bytes((1 if cls.fullmatch(chr(b)) else 0) if b < 0x80 else (0 if ascii_only else 1) for b in range(256))


def _scanned(value: Any, out: list[str]) -> None:
    """Append to ``out`` every string of ``value`` that :meth:`Redactor.value` passes to
    :meth:`Redactor.text` (the same walk: dict keys in :data:`SKIP_KEYS` and strings under 8 characters
    left out)."""
    if isinstance(value, str):
        if len(value) >= 8:
            out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if v.__class__ is str:  # the common leaf, without a call
                if len(v) >= 8 and k not in SKIP_KEYS:
                    out.append(v)
            elif k not in SKIP_KEYS and v is not None and v.__class__ not in _SCALARS:
                _scanned(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            if v.__class__ is str:
                if len(v) >= 8:
                    out.append(v)
            elif v.__class__ not in _SCALARS:
                _scanned(v, out)


@dataclass(frozen=True)
class _Screen:
    """What :meth:`Redactor.screen` knows of one pattern (index ``index`` of ``Redactor._flat``)."""

    index: int
    needs: int
    lead: tuple[tuple[str, str], ...] | None
    """Probe characters (a character and, case-insensitive, its upper case) of the most selective
    requirement's literals (each literal's rarest character); ``None`` when the pattern has no requirement."""
    requirements: tuple[tuple[_Alt, ...], ...]
    """:func:`_requirements` (case-insensitive literals lower-cased)."""
    runs: tuple[tuple[bytes, bytes], ...]
    """(translation table, needle of marked bytes) per :func:`_mandatory_runs` run."""
    rx: re.Pattern[str] | None
    """The pattern itself when escape-safe (:func:`_escape_safe`): run on the screened text last."""


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
        self._screens = [self._screen_of(i) for i in range(len(self._flat))] if prefilter else []
        self._probes: list[list[tuple[str, str, tuple[int, ...]]]] = []
        """Per gate level offered (:meth:`_spans`): (probe character, its upper case, the screens of that
        level or below led by it), one ``in`` per distinct probe."""
        for level in (_NO_GATE, _KEYWORD, _KEYWORD_AND_QUOTE):
            groups: dict[tuple[str, str], list[int]] = {}
            for s in self._screens:
                for probe in s.lead or () if s.needs <= level else ():
                    groups.setdefault(probe, []).append(s.index)
            self._probes.append([(ch, upper, tuple(ix)) for (ch, upper), ix in groups.items()])
        self._unprobed = [s.index for s in self._screens if s.lead is None]
        self._icase: dict[str, re.Pattern[str]] = {
            t: re.compile(re.escape(t), re.IGNORECASE)
            for s in self._screens
            for req in s.requirements
            for t, icase in req
            if icase
        }

    def _screen_of(self, index: int) -> _Screen:
        from re import _parser  # type: ignore[attr-defined]

        rx, _group, needs, _kind, _check = self._flat[index]
        try:
            parsed = _parser.parse(rx.pattern, rx.flags)
            flags = parsed.state.flags
            reqs = _requirements(parsed, bool(flags & re.IGNORECASE))
            runs = tuple((table, b"\1" * n) for table, n in _mandatory_runs(parsed, flags))
            safe = _escape_safe(parsed)
        except Exception:  # noqa: BLE001 - a parser change: no knowledge, so no skipping
            reqs, runs, safe = [], (), False
        lead = None
        if reqs:  # the requirement whose most common literal is rarest
            best = max(reqs, key=lambda r: min(max(_rank(ch) for ch in t) for t, _ in r))
            probes = dict.fromkeys((max(t, key=_rank), icase) for t, icase in best)
            lead = tuple((ch, ch.upper() if icase else ch) for ch, icase in probes)
        return _Screen(index, needs, lead, tuple(reqs), runs, rx if safe else None)

    # -- screening -----------------------------------------------------------------------------
    def screen(self, text: str, only: list[int] | None = None) -> list[int]:
        """Indices (in order) of the patterns that may match in some string of a value whose scanned
        strings, joined with newlines, are ``text`` (:meth:`_scanned`); every other pattern provably
        matches none of them. A pattern is dropped when one of its necessary conditions fails on ``text``:
        the keyword or quote gate of :meth:`_spans` is shut, a literal it requires is absent
        (case-insensitive ones: in the lower-cased text when it is ASCII, else by ``re`` itself), a run of
        one character class it requires is absent, or, for an escape-safe pattern (no anchor, boundary or
        lookaround, never a control character, so a match in one string is a match in ``text``), the
        pattern finds nothing in ``text``. ``only``: screen just those patterns (what a screen of a larger
        text containing this one left)."""
        blob = text.encode("utf-8", "surrogatepass")
        ascii_only = blob.isascii()
        lower = blob.lower().decode() if ascii_only else None
        if lower is not None:
            gate = any(w in lower for w in _KEYWORD_GATE_WORDS)
        else:
            gate = _KEYWORD_GATE.search(text) is not None
        quote = gate and any(q in text for q in _QUOTES)
        offers = _KEYWORD_AND_QUOTE if quote else _KEYWORD if gate else _NO_GATE
        if only is not None:
            picked = set(only)
        else:
            picked = set(self._unprobed)
            for ch, upper, indices in self._probes[offers]:
                if upper == ch:  # case-sensitive
                    probed = ch in text
                elif lower is not None:  # case-insensitive, ASCII text: ch or its upper case, in one search
                    probed = ch in lower
                else:
                    probed = True  # the literal may hide behind a non-ASCII case fold: keep its screens
                if probed:
                    picked.update(indices)
        out: list[int] = []
        seen: dict[Any, bool] = {}  # literal or run -> present (screens share many)
        for i in sorted(picked):
            s = self._screens[i]
            if s.needs > offers:
                continue
            ok = True
            for req in s.requirements:
                for alt in req:
                    hit = seen.get(alt)
                    if hit is None:
                        t, icase = alt
                        if not icase:
                            hit = t in text
                        elif lower is not None:
                            hit = t in lower
                        else:
                            hit = self._icase[t].search(text) is not None
                        seen[alt] = hit
                    if hit:
                        break
                else:
                    ok = False
                    break
            if not ok:
                continue
            for run in s.runs:
                hit = seen.get(run)
                if hit is None:
                    hit = seen[run] = run[1] in blob.translate(run[0])
                if not hit:
                    ok = False
                    break
            if ok and (s.rx is None or s.rx.search(text) is not None):
                out.append(s.index)
        return out

    def clean(self, text: str) -> bool:
        """True when no secret can be found in any string contained in ``text`` (a substring of it): the
        screen (:meth:`screen`) leaves no pattern, and its conditions hold in any text containing the
        strings, so :meth:`value` of a value whose strings are all in ``text`` returns it unchanged with no
        count. Always False without the pre-filter (every pattern runs then)."""
        return self._prefilter and not self.screen(text)

    def values_screened(self, values: Sequence[Any], *, batch: int = 256) -> list[tuple[Any, Counter[str]]]:
        """:meth:`value` of each of ``values`` (its result and counts, in order), for many at once: the
        strings of ``batch`` values are screened together (:meth:`screen`), so a batch with no secret
        costs one screen and a walk per value; otherwise each value of the batch is screened for the
        patterns the batch left, and walked with what its own screen leaves. Values come back as
        themselves (not copies) when nothing can match in them."""
        out: list[tuple[Any, Counter[str]]] = []
        for start in range(0, len(values), batch):
            chunk = values[start : start + batch]
            strings: list[list[str]] = []
            for v in chunk:
                found: list[str] = []
                _scanned(v, found)
                strings.append(found)
            left = self.screen("\n".join(s for found in strings for s in found)) if self._prefilter else None
            for v, found in zip(chunk, strings, strict=True):
                if left is None:
                    out.append(self.value(v))
                    continue
                mine = self.screen("\n".join(found), only=left) if left and found else []
                if not mine:
                    out.append((v, Counter()))
                else:
                    counts: Counter[str] = Counter()
                    out.append((self._walk(v, counts, [self._flat[i] for i in mine]), counts))
        return out

    def value_screened(self, value: Any, counts: Counter[str] | None = None) -> tuple[Any, Counter[str]]:
        """:meth:`value`'s result, faster on values with no secret: the strings :meth:`value` would scan
        are screened together once (:meth:`screen`) and only the patterns left run on each of them.
        Returns ``value`` itself (not a copy) when none is left."""
        counts = Counter() if counts is None else counts
        if not self._prefilter:
            return self.value(value, counts)
        found: list[str] = []
        _scanned(value, found)
        if not found:
            return value, counts
        left = self.screen("\n".join(found))
        if not left:
            return value, counts
        if len(left) == len(self._flat):
            return self.value(value, counts)
        flat = [self._flat[i] for i in left]
        return self._walk(value, counts, flat), counts

    def _spans(self, text: str, flat: list | None = None) -> list[tuple[int, int, str]]:
        spans: list[tuple[int, int, str]] = []
        # Preconditions no match can lack (see _KEYWORD_GATE, _QUOTES): the level a pattern needs
        # is above what the text offers, so its search would find nothing.
        offers = _NO_GATE if self._prefilter else _KEYWORD_AND_QUOTE
        if offers is _NO_GATE and _KEYWORD_GATE.search(text) is not None:
            offers = _KEYWORD_AND_QUOTE if any(q in text for q in _QUOTES) else _KEYWORD
        n = len(text)
        if flat is None:
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

    def text(self, text: str, flat: list | None = None) -> tuple[str, Counter[str]]:
        """``text`` with every secret replaced by its marker, and the count of secrets per type (``flat``:
        only those patterns, for :meth:`value_screened`)."""
        counts: Counter[str] = Counter()
        if not text or len(text) < 8:
            return text, counts
        spans = self._spans(text, flat)
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

    def _walk(self, value: Any, counts: Counter[str], flat: list | None = None) -> Any:
        if isinstance(value, str):
            if len(value) < 8:
                return value
            new, c = self.text(value, flat)
            if c:
                counts.update(c)
            return new
        if isinstance(value, dict):
            return {
                k: (v if k in SKIP_KEYS or v is None or v.__class__ in _SCALARS else self._walk(v, counts, flat))
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [v if v.__class__ in _SCALARS else self._walk(v, counts, flat) for v in value]
        return value
