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
scanners (see :data:`DETECTORS` for each source: OpenAI, Anthropic, GitHub, AWS key ids and
secret keys, Slack, npm, Google and GCP, Azure, Stripe, JWTs, PEM private keys, passwords in
URLs, bearer tokens), plus phrasing in English and Chinese: "password is …", "secret access key
is …", "api secret …", "wifi pass: '…'", "密码是：…", "数据库的密码…", "口令是 …", "秘钥是 …".
They are written for notes, not code: a phrase needs a value that looks like a credential (not
an ordinary word after "is"; digits, symbols or inner capitals when nothing stands between
keyword and value), so "the token is valid", "密码是什么", "密码忘了" or "改密码" stay as they
are.

A text is checked whole: a secret over several lines (a PEM private key from ``-----BEGIN`` to
``-----END``) is one finding, and a writer that stores lines one by one (the flush) checks them
together first (:meth:`SecretGuard.redact_lines`), so no line of it is kept. A
``[REDACTED:<kind>]`` marker is never redacted again. ``benchmarks/secrets_fp.py`` measures the
detectors on a secrets corpus and on normal notes, line by line and whole (docs/reliability.md
has the figures, with detect-secrets for comparison).
"""

from __future__ import annotations

import bisect
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
    #: Lowercase words one of which the text must hold for the pattern to be tried at all: the
    #: keyword phrases are the slowest patterns and most texts name no password or key.
    hints: tuple[str, ...] = ()


_PASSWORD_WORDS = (
    r"password|passwd|passphrase|pass ?code|pwd|(?-i:PIN)|pin (?:code|number)|credentials?"
    # "pass" alone is an ordinary word ("boarding pass: 12B"); after a place to log in it is not
    r"|(?:wi-?fi|wlan|router|login|admin|root|db|database|e-?mail|account|vpn|ssh|ftp)[ _-]?pass"
)
#: One of these is in every word of :data:`_PASSWORD_WORDS` (see :attr:`_Detector.hints`).
_PASSWORD_HINTS = ("pass", "pwd", "pin", "credential")
_KEY_WORDS = (
    r"api[ _-]?(?:key|secret)|(?:client|app|consumer|shared)[ _-]?secret"
    r"|secret(?:[ _-]access)?(?:[ _-]key)?|(?:storage|account|access|signing|encryption)[ _-]key"
    r"|(?:access|auth(?:orization)?|refresh)[ _-]?token|token"
)
_ZH_PASSWORD = r"密码|口令|登录密码|支付密码|开机密码|PIN码"
_ZH_KEY = r"密钥|秘钥|私钥|令牌|访问令牌"
#: What joins a keyword to its value ("is", "was changed to", ":"…); the longer phrases first,
#: so that "password is now X" reads "is now", not "is" with the value "now".
_SAY = (
    r"(?:(?:is now|is still|was changed to|changed to|is set to|set to|is|was|are)\b"
    r"|=|:|：)"
)
_ZH_SAY = r"(?:(?:是|为|改成了?|改为|设为|设置为|换成了?)\s*[：:=]?|[：:=])"
#: Words that follow "password is" in ordinary sentences ("the password is wrong").
_ORDINARY_WORDS = (
    "a an the my your his her our their this that it its not no now still also too very "
    "required needed wrong incorrect correct invalid valid expired changed reset set stored "
    "saved kept empty missing blank same different new old weak strong long short secret hidden "
    "available visible encrypted hashed rotated in on at for from with by to of and or but "
    "true false none null yes"
)
_NOT_A_VALUE = frozenset(_ORDINARY_WORDS.split())
_VALUE_END = "\"'“”‘’`)]}>，。；、！？：,;"
_QUOTES = "\"'“”‘’`「」"
_QUOTED = r"\"[^\"\n]{1,80}\"|'[^'\n]{1,80}'|“[^”\n]{1,80}”|‘[^’\n]{1,80}’|`[^`\n]{1,80}`"
#: A value in quotes, spaces and all ("the password is 'correct horse battery'"), or one word.
_VALUE = (
    rf"({_QUOTED}"
    rf"|[\"'“‘`]?[^\s{re.escape(_VALUE_END)}]+(?:[!?.]+(?=[\s\"'”’`]|$))?)"
)
#: A value after a Chinese keyword: quoted, or a run of characters that are not Chinese (a
#: password in a Chinese sentence is written in ASCII: "密码是abc12345，别忘了").
_ZH_VALUE = (
    r"(「[^」\n]{1,80}」|“[^”\n]{1,80}”|\"[^\"\n]{1,80}\"|'[^'\n]{1,80}'"
    rf"|[^\s{re.escape(_VALUE_END)}「」\u3000-\u9fff\uff00-\uffef]+)"
)
#: Names of algorithms and schemes, not values ("密码 SHA256 加密", "密钥是 AES-256-GCM").
_TECH_WORD = re.compile(
    r"(?i)(?:md5|sha-?\d*|bcrypt|scrypt|argon2(?:id|i|d)?|pbkdf2(?:-sha\d+)?|aes(?:-?\d+)?"
    r"(?:-[a-z]+)?|rsa(?:-?\d+)?|ecdsa|ed25519|hmac(?:-sha\d+)?|wpa\d?(?:-[a-z]+)?|utf-?8"
    r"|base64|totp|hotp|2fa|mfa|otp|ssl|tls(?:v?\d(?:\.\d)?)?)"
)


def _unquote(value: str) -> str:
    return value.strip(_QUOTES)


def _looks_like_password(value: str) -> bool:
    """A value after "password is": anything but an ordinary word of a sentence."""
    value = _unquote(value)
    word = value.rstrip(".:").lower()  # "if password is None:"
    # A masked or elided value ("password: ********", "password is '… …'") holds no secret.
    masked = len(value.strip("….*· ")) < 4
    return len(value) >= 4 and not masked and word not in _NOT_A_VALUE and not _only_cjk(value)


def _looks_like_credential(value: str) -> bool:
    """A value after a keyword with no "is" between ("数据库的密码Xk9#2024", "password
    'hunter2-Blue!'"): made like a credential, with digits or symbols or inner capitals."""
    value = _unquote(value)
    if len(value) < 6 or _only_cjk(value) or _TECH_WORD.fullmatch(value):
        return False
    digit = any(c.isdigit() for c in value)
    symbol = any(not c.isalnum() and not c.isspace() for c in value)
    inner_capital = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return digit or symbol or inner_capital


def _looks_like_key(value: str) -> bool:
    """A value after "token is" / "API key:": long and mixed like a machine-made string."""
    value = _unquote(value)
    return len(value) >= 12 and _has_digit_and_letter(value) and _entropy(value) >= 3.0


def _looks_like_aws_secret(value: str) -> bool:
    """40 base64 characters as AWS makes them: both cases and a digit, ``/`` or ``+`` (a git
    commit hash next to a key id is lowercase hex)."""
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    return lower and upper and any(c.isdigit() or c in "/+" for c in value)


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


_PEM_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
#: A PEM body without its END line (a cut text): ``Proc-Type:`` headers and base64 runs, one a
#: line, the lines split by newlines or by ``\n`` escapes (a key inside JSON). A BEGIN line with
#: no body is a header named in prose, not a key.
_PEM_BODY = (
    r"(?:(?:\s|\\n)+(?:Proc-Type|DEK-Info): ?[^\s\\]+)*"
    r"(?:(?:\s|\\n)+(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]{2,15}={1,2}))+"
)
_AWS_KEY_ID = r"\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[A-Z0-9]{16}\b"
_AWS_SECRET = r"(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"

#: The detectors, most specific first (an overlap keeps the first). Sources of the formats:
#: OpenAI and Anthropic API key prefixes (their API docs), GitHub's token prefixes (GitHub
#: blog "Behind GitHub's new authentication token formats", 2021), AWS access key id prefixes
#: (AWS IAM docs, "Unique identifier prefixes") and secret access keys (40 base64 characters,
#: AWS docs "Managing access keys"), Slack token prefixes (``xox?-``, app-level ``xapp-``) and
#: webhook URLs (Slack API docs, "Token types"), npm access tokens (``npm_`` + 36, GitHub blog
#: "Introducing the new npm access token format", 2021), Google API keys (``AIza``), Google
#: OAuth client secrets (``GOCSPX-``) and access tokens (``ya29.``), GCP service-account key
#: files (``private_key_id``: 40 hex, ``private_key``: a PEM key; Google Cloud docs "Create and
#: delete service account keys"), Azure storage connection strings (``AccountKey=`` /
#: ``SharedAccessKey=``: base64; Azure docs "Configure Azure Storage connection strings"),
#: Azure AD client secrets (three characters, a digit, ``Q~``, 31–34 more: Microsoft's
#: security-utilities pattern SEC101/156 "AadClientAppSecret"), Stripe live/test keys, JWTs
#: (RFC 7519, base64url header ``eyJ``), PEM private keys (RFC 7468), user:password in URLs
#: (RFC 3986 userinfo; the password runs to the last ``@`` before the host, as people write
#: them unescaped).
DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private key",
        _rx(
            rf"-----BEGIN {_PEM_LABEL}-----(?:.*?-----END {_PEM_LABEL}-----|{_PEM_BODY})",
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
    _Detector("AWS access key id", _rx(_AWS_KEY_ID)),
    _Detector(
        "AWS secret access key",
        _rx(
            r"(?i)aws.{0,20}?secret.{0,20}?(?:[=:：]|\s(?:is|was)\b)\s*[\"']?"
            r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        1,
    ),
    # The secret next to its key id (a credentials CSV, "key AKIA… secret wJal…"), either side.
    _Detector(
        "AWS secret access key",
        _rx(rf"{_AWS_KEY_ID}[\s\S]{{0,80}}?{_AWS_SECRET}"),
        1,
        _looks_like_aws_secret,
    ),
    _Detector(
        "AWS secret access key",
        _rx(rf"{_AWS_SECRET}(?=[\s\S]{{0,80}}?{_AWS_KEY_ID})"),
        1,
        _looks_like_aws_secret,
    ),
    _Detector("Slack token", _rx(r"\b(?:xox[abposre]|xapp-\d)-[A-Za-z0-9-]{10,}")),
    _Detector(
        "Slack webhook",
        _rx(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{20,}"),
    ),
    _Detector("npm token", _rx(r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    _Detector("Google API key", _rx(r"\bAIza[0-9A-Za-z_-]{35}")),
    _Detector("Google OAuth secret", _rx(r"\b(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[\w-]{20,})")),
    _Detector(
        "GCP private key id",
        _rx(r"(?i)\bprivate_key_id[\"']?\s*[:=]\s*[\"']?([0-9a-f]{40})(?![0-9a-z])"),
        1,
    ),
    _Detector(
        "Azure access key",
        _rx(r"(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*([A-Za-z0-9+/]{20,}={0,2})"),
        1,
    ),
    _Detector(
        "Azure client secret",
        _rx(r"(?<![\w~.-])[\w~.]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])", re.A),
    ),
    _Detector("Stripe key", _rx(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{20,}")),
    _Detector(
        "JSON web token",
        _rx(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    _Detector(
        "password in a URL",
        _rx(
            r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@'\"]{0,64}:([^\s/?#'\"]{3,128})"
            r"@(?:[\w.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?![\w@.-])"
        ),
        1,
        lambda value: not value.startswith(("$", "<", "{", "%", "*")),
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
            rf"\s*{_SAY}\s*{_VALUE}"
        ),
        1,
        _looks_like_password,
        _PASSWORD_HINTS,
    ),
    # No "is" or ":", but quotes: "the wifi password 'hunter2-Blue!'".
    _Detector(
        "password",
        _rx(rf"(?i)\b(?:{_PASSWORD_WORDS})[ \t]+({_QUOTED})"),
        1,
        _looks_like_credential,
        _PASSWORD_HINTS,
    ),
    _Detector(
        "password",
        _rx(rf"(?i)(?:{_ZH_PASSWORD})\s*{_ZH_SAY}\s*{_ZH_VALUE}"),
        1,
        _looks_like_password,
    ),
    _Detector(
        "secret key",
        _rx(rf"(?i)\b(?:{_KEY_WORDS})\b(?:\s*{_SAY}\s*|[ \t]+){_VALUE}"),
        1,
        _looks_like_key,
        ("key", "secret", "token"),
    ),
    _Detector(
        "secret key",
        _rx(rf"(?:{_ZH_KEY})\s*{_ZH_SAY}\s*{_ZH_VALUE}"),
        1,
        _looks_like_credential,
    ),
    # "token是…", "api key：…" in a Chinese sentence: the English words ask for a machine-made
    # value, as they do in English ("token = {token}" in a pasted line of code is no secret).
    _Detector(
        "secret key",
        _rx(rf"(?i)(?:api ?key|token)\s*{_ZH_SAY}\s*{_ZH_VALUE}"),
        1,
        _looks_like_key,
    ),
    # Chinese needs no verb: "数据库的密码Xk9#2024", "密码 Xk9#2024" (the value decides).
    _Detector(
        "password",
        _rx(rf"(?:{_ZH_PASSWORD})[ \t]*{_ZH_VALUE}"),
        1,
        _looks_like_credential,
    ),
    _Detector(
        "secret key",
        _rx(rf"(?:{_ZH_KEY})[ \t]*{_ZH_VALUE}"),
        1,
        _looks_like_credential,
    ),
)
#: A marker memdir wrote: never a secret itself, and nothing overlapping it is (text checked
#: twice, or a note that already holds one, is not redacted again).
_MARKER = re.compile(r"\[REDACTED:[^\]\n]{1,60}\]")


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
        """The secrets in ``text``, in order, without overlaps.

        ``text`` is read whole: a secret that runs over several lines (a PEM private key) is
        one finding. ``[REDACTED:…]`` markers already in the text are never (part of) one.
        """
        if self.action == "off" or not text:
            return []
        # The spans taken so far, disjoint and sorted: an overlap is checked with a bisection
        # (a long archive can hold thousands of findings).
        taken = [(m.start(), m.end()) for m in _MARKER.finditer(text)]
        lowered = text.lower()
        found: list[Finding] = []
        for detector in self.detectors:
            if detector.hints and not any(hint in lowered for hint in detector.hints):
                continue
            for match in detector.pattern.finditer(text):
                start, end = match.span(detector.group)
                if start < 0 or end <= start:
                    continue
                value = match.group(detector.group)
                if detector.check is not None and not detector.check(value):
                    continue
                before = bisect.bisect_left(taken, (end, end))
                if before and taken[before - 1][1] > start:
                    continue
                taken.insert(before, (start, end))
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

    def redact_lines(self, lines: Sequence[str]) -> list[tuple[str, list[str]]]:
        """Each of ``lines`` redacted, with the kinds of secret that touch it.

        For a writer that stores consecutive lines one by one (the flush): the secrets are
        found on the lines joined as one text, so a secret that runs over several lines (a PEM
        private key) is found whole. Its marker goes on the line where it starts; the rest of
        it is cut from the lines it covers (a line that held only secret comes back empty).
        """
        text = "\n".join(lines)
        found = self.find(text)
        out: list[tuple[str, list[str]]] = []
        start = 0
        for line in lines:
            end = start + len(line)
            # A finding touches the line when it overlaps it or the newline after it (an empty
            # line inside a PEM block is covered too).
            touching = [f for f in found if f.start <= end and start < f.end]
            pieces: list[str] = []
            pos = start
            for finding in touching:
                pieces.append(text[pos : max(pos, finding.start)])
                if finding.start >= start:
                    pieces.append(REDACTED.format(kind=finding.kind))
                pos = max(pos, min(finding.end, end))
            pieces.append(text[pos:end])
            out.append(("".join(pieces), [f.kind for f in touching]))
            start = end + 1
        return out

    def check_fact(self, text: str) -> tuple[str, list[str]]:
        """Apply the action to one fact: the text to write and the kinds redacted.

        Raises:
            SecretRefused: ``refuse`` and the text holds a secret.
        """
        if self.action == "refuse":
            found = self.find(text)
            if found:
                raise refusal([f.kind for f in found])
        return self.redact(text)


def refusal(kinds: Sequence[str]) -> SecretRefused:
    """The error for a fact not written under ``refuse`` because it holds ``kinds``."""
    return SecretRefused(
        f"not written: the text holds what looks like a secret ({describe_kinds(kinds)}); "
        "memdir does not store secrets: leave the value out, or note where the secret is kept"
    )


def describe_kinds(kinds: Sequence[str]) -> str:
    """``"2 × password, GitHub token"``: what was found, for a message."""
    counts = Counter(kinds)
    return ", ".join(f"{n} × {kind}" if n > 1 else kind for kind, n in counts.items())


#: The guard used when a workspace is built without a config (the default: redact).
DEFAULT_GUARD = SecretGuard()
