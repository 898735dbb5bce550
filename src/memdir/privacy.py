"""Secrets never kept by accident: a detector run on every automatic write (issue 14).

:class:`SecretGuard` finds credentials in text that memdir is about to write on its own (chat
auto-capture, the pre-compaction flush, extraction, the ``memory_write`` tool, session archives,
dream promotions) and, per ``[privacy] secrets``:

- ``redact`` (default): each secret is replaced by ``[REDACTED:<kind>]`` and the write goes on;
  the writer says what was redacted (the write tool tells the model).
- ``refuse``: a single fact that holds a secret is not written; the error says which kinds were
  found. Bulk writes (a session archive, dream promotions) are redacted instead, so that one
  token in a long conversation does not lose the rest.
- ``off``: nothing is checked.

The detectors are token formats published by their issuers and patterns widely used by secret
scanners (see :data:`DETECTORS` for each source), plus "password is …" / "密码是 …" phrasing
in English and Chinese. They are written for notes, not code: a phrase needs a value that looks
like a credential (digits or symbols, or a password keyword), so "the token is valid" or "密码是
什么" stay as they are. ``benchmarks/secrets_fp.py`` measures them on a secrets corpus and on
normal notes (docs/reliability.md has the figures, with detect-secrets for comparison).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memdir.config import SECRET_ACTIONS
from memdir.errors import ConfigError, MemdirError

REDACTED = "[REDACTED:{kind}]"


class SecretRefused(MemdirError):
    """A fact was not written because it holds something that looks like a secret."""


@dataclass(frozen=True)
class Finding:
    """One secret: its kind (``GitHub token``, ``password``…) and where it is in the text."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class _Detector:
    kind: str
    pattern: re.Pattern[str]
    #: The regex group holding the secret (0: the whole match).
    group: int = 0
    #: Extra check of the secret's text (False: not a secret after all).
    check: Callable[[str], bool] | None = None


_PASSWORD_WORDS = (
    r"password|passwd|passphrase|pass ?code|pwd|(?-i:PIN)|pin (?:code|number)|credentials?"
)
_KEY_WORDS = r"api[ _-]?key|secret(?: key)?|access[ _-]?token|auth(?:orization)?[ _-]?token|token"
_ZH_PASSWORD = r"密码|口令|登录密码|支付密码|开机密码|PIN码"
_ZH_KEY = r"密钥|秘钥|私钥|令牌|访问令牌|api ?key|token"
#: Words that follow "password is" in ordinary sentences ("the password is wrong").
_ORDINARY_WORDS = (
    "a an the my your his her our their this that it its not no now still also too very "
    "required needed wrong incorrect correct invalid valid expired changed reset set stored "
    "saved kept empty missing blank same different new old weak strong long short secret hidden "
    "available visible encrypted hashed rotated in on at for from with by to of and or but"
)
_NOT_A_VALUE = frozenset(_ORDINARY_WORDS.split())
_VALUE_END = "\"'“”‘’`)]}>，。；、！？：,;"


def _looks_like_password(value: str) -> bool:
    """A value after "password is": anything but an ordinary word of a sentence."""
    return len(value) >= 4 and value.lower() not in _NOT_A_VALUE and not _only_cjk(value)


def _looks_like_key(value: str) -> bool:
    """A value after "token is" / "API key:": long and mixed like a machine-made string."""
    return len(value) >= 12 and _has_digit_and_letter(value) and _entropy(value) >= 3.0


def _has_body(value: str) -> bool:
    """A token body with letters and digits (``sk-this-is-a-long-slug`` is not a key)."""
    return _has_digit_and_letter(value)


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _only_cjk(value: str) -> bool:
    return all("\u3000" <= c <= "\u9fff" or "\uff00" <= c <= "\uffef" for c in value)


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


#: The detectors, most specific first (an overlap keeps the first). Sources of the formats:
#: OpenAI and Anthropic API key prefixes (their API docs), GitHub's token prefixes (GitHub
#: blog "Behind GitHub's new authentication token formats", 2021), AWS access key id prefixes
#: (AWS IAM docs, "Unique identifier prefixes"), Slack token prefixes and webhook URLs (Slack
#: API docs), Google API keys (``AIza``), Stripe live/test keys, JWTs (RFC 7519, base64url
#: header ``eyJ``), PEM private keys (RFC 7468), user:password in URLs (RFC 3986 userinfo).
DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private key",
        _rx(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*)",
            re.S,
        ),
    ),
    _Detector("Anthropic API key", _rx(r"\bsk-ant-[A-Za-z0-9]{2,10}-[A-Za-z0-9_-]{20,}")),
    _Detector(
        "OpenAI API key",
        _rx(r"\bsk-(?:proj-|svcacct-|admin-|None-)?([A-Za-z0-9_-]{20,})"),
        1,
        _has_body,
    ),
    _Detector("GitHub token", _rx(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{40,})")),
    _Detector("AWS access key id", _rx(r"\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[A-Z0-9]{16}\b")),
    _Detector(
        "AWS secret access key",
        _rx(r"(?i)aws.{0,20}?secret.{0,20}?[=:：]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"),
        1,
    ),
    _Detector("Slack token", _rx(r"\bxox[abposre]-[A-Za-z0-9-]{10,}")),
    _Detector(
        "Slack webhook",
        _rx(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{20,}"),
    ),
    _Detector("Google API key", _rx(r"\bAIza[0-9A-Za-z_-]{35}")),
    _Detector("Stripe key", _rx(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{20,}")),
    _Detector(
        "JSON web token",
        _rx(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    _Detector(
        "password in a URL",
        _rx(r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@'\"]{0,64}:([^\s@/'\"]{3,128})@[\w.-]"),
        1,
        lambda value: not value.startswith(("$", "<", "{", "%", "*", "[REDACTED")),
    ),
    _Detector(
        "bearer token",
        _rx(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)"),
        1,
        _has_digit_and_letter,
    ),
    _Detector(
        "password",
        _rx(
            rf"(?i)\b(?:{_PASSWORD_WORDS})\b(?:\s+(?:for|of|to|on)(?:\s+[^\s:：=.!?,;]{{1,30}}){{1,3}}?)?"
            rf"\s*(?:is|was|=|:|：|is now|was changed to|changed to|set to)\s*"
            rf"[\"'“‘`]?([^\s{re.escape(_VALUE_END)}]+(?:[!?.]+(?=[\s\"'”’`]|$))?)"
        ),
        1,
        _looks_like_password,
    ),
    _Detector(
        "password",
        _rx(
            rf"(?i)(?:{_ZH_PASSWORD})(?:是|为|：|:|=|改成了?|改为|设为|设置为)\s*"
            rf"[\"'“‘「]?([^\s{re.escape(_VALUE_END)}「」]+)"
        ),
        1,
        _looks_like_password,
    ),
    _Detector(
        "secret key",
        _rx(
            rf"(?i)\b(?:{_KEY_WORDS})\b\s*(?:is|was|=|:|：)\s*[\"'“‘`]?"
            rf"([^\s{re.escape(_VALUE_END)}]+)"
        ),
        1,
        _looks_like_key,
    ),
    _Detector(
        "secret key",
        _rx(rf"(?i)(?:{_ZH_KEY})(?:是|为|：|:|=)\s*[\"'“‘「]?([^\s{re.escape(_VALUE_END)}「」]+)"),
        1,
        _looks_like_key,
    ),
)


class SecretGuard:
    """The secrets check of one workspace (see the module docstring).

    Args:
        action: ``redact``, ``refuse`` or ``off``.
        extra_patterns: more regular expressions; a match is a secret of kind ``custom``.

    Raises:
        ConfigError: an unknown action or a pattern that is not a valid regex.
    """

    def __init__(self, action: str = "redact", extra_patterns: Sequence[str] = ()) -> None:
        if action not in SECRET_ACTIONS:
            raise ConfigError(
                f"privacy.secrets must be one of {', '.join(SECRET_ACTIONS)}, not {action!r}"
            )
        self.action = action
        extra: list[_Detector] = []
        for pattern in extra_patterns:
            try:
                extra.append(_Detector("custom", re.compile(pattern)))
            except re.error as exc:
                raise ConfigError(
                    f"privacy.secret_patterns: {pattern!r} is not a regex ({exc})"
                ) from exc
        self.detectors = DETECTORS + tuple(extra)

    def find(self, text: str) -> list[Finding]:
        """The secrets in ``text``, in order, without overlaps."""
        if self.action == "off" or not text:
            return []
        found: list[Finding] = []
        for detector in self.detectors:
            for match in detector.pattern.finditer(text):
                start, end = match.span(detector.group)
                if start < 0 or end <= start:
                    continue
                value = match.group(detector.group)
                if detector.check is not None and not detector.check(value):
                    continue
                if any(f.start < end and start < f.end for f in found):
                    continue
                found.append(Finding(detector.kind, start, end))
        return sorted(found, key=lambda f: f.start)

    def redact(self, text: str) -> tuple[str, list[str]]:
        """``text`` with every secret replaced by ``[REDACTED:<kind>]``, and the kinds found."""
        found = self.find(text)
        if not found:
            return text, []
        out: list[str] = []
        pos = 0
        for finding in found:
            out.append(text[pos : finding.start])
            out.append(REDACTED.format(kind=finding.kind))
            pos = finding.end
        out.append(text[pos:])
        return "".join(out), [f.kind for f in found]

    def check_fact(self, text: str) -> tuple[str, list[str]]:
        """Apply the action to one fact: the text to write and the kinds redacted.

        Raises:
            SecretRefused: ``refuse`` and the text holds a secret.
        """
        if self.action == "refuse":
            found = self.find(text)
            if found:
                raise SecretRefused(
                    f"not written: the text holds what looks like a secret "
                    f"({describe_kinds([f.kind for f in found])}); memdir does not store "
                    "secrets: leave the value out, or note where the secret is kept"
                )
        return self.redact(text)


def describe_kinds(kinds: Sequence[str]) -> str:
    """``"2 × password, GitHub token"``: what was found, for a message."""
    counts = Counter(kinds)
    return ", ".join(f"{n} × {kind}" if n > 1 else kind for kind, n in counts.items())


#: The guard used when a workspace is built without a config (the default: redact).
DEFAULT_GUARD = SecretGuard()
