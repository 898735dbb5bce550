"""The detectors of :mod:`memdir.safety.privacy`: token formats, keyword phrases, and the general
rules (a keyword near a value, a long random-looking string).

Formats and phrases are listed with their sources where :data:`DETECTORS` is built; the
general rules (issue 35) catch what no list names: a value that looks like a credential a few
words after "password", "pw", "login", "token" or "secret" ("wifi password hunter2Blue",
"the db pw for staging Xk9#2024q"), and a run of 20 or more letters and digits that mixes both
cases and digits the way machine-made keys do, with no word inside it (a commit hash, a UUID, a
model name such as ``paraphrase-multilingual-MiniLM-L12-v2`` or a CamelCase identifier are
not). ``benchmarks/secrets_fp.py`` measures them on a corpus of secrets and on ordinary notes.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Detector:
    """One way to find a secret: a pattern, the group that holds the value, a check of the
    value, and words one of which the text must hold before the pattern is tried."""

    kind: str
    pattern: re.Pattern[str]
    #: The regex group holding the secret (0: the whole match).
    group: int = 0
    #: Extra check of the secret's text (False: not a secret after all).
    check: Callable[[str], bool] | None = None
    #: Lowercase words one of which the text must hold for the pattern to be tried at all: the
    #: keyword phrases are the slowest patterns and most texts name no password or key.
    hints: tuple[str, ...] = ()
    #: Instead of ``group`` and ``check``: where in the match the secret is, or None (a
    #: keyword followed by a few words, the first of which that looks like a credential is it).
    pick: Callable[[re.Match[str]], tuple[int, int] | None] | None = None


_PASSWORD_WORDS = (
    r"password|passwd|passphrase|pass ?code|pwd|pw|(?-i:PIN)|pin (?:code|number)|credentials?"
    # "pass" alone is an ordinary word ("boarding pass: 12B"); after a place to log in it is not
    r"|(?:wi-?fi|wlan|router|login|admin|root|db|database|e-?mail|account|vpn|ssh|ftp)[ _-]?pass"
)
#: One of these is in every word of :data:`_PASSWORD_WORDS` (see :attr:`Detector.hints`).
_PASSWORD_HINTS = ("pass", "pw", "pin", "credential")
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


def _has_mixed_case(value: str) -> bool:
    return any(c.isupper() for c in value) and any(c.islower() for c in value)


#: What a value near a keyword is not, though it has digits or symbols: a URL, an e-mail
#: address, a path, a file name, a date, a time, a version, a number with its unit, a mention,
#: a call or a template placeholder of pasted code, a host name.
_NOT_A_CREDENTIAL = re.compile(
    r"(?i)^(?:\w+://.*|www\..*|[^@\s]+@[^@\s]+\.[a-z]{2,}|[~.]{0,2}/.*|[\w-]+\.[a-z]{1,5}"
    r"|v?\d+(?:[.:,/-]\d+)*[a-z]{0,3}|\d{4}-\d{2}-\d{2}(?:t[\d:.]+z?)?|\d+(?:st|nd|rd|th)"
    r"|[#@$%].*|.*\w\(.*|.*\{.*\}.*|[\w-]+(?:\.[\w-]+){2,}(?::\S*)?|\[redacted:.*)$"
)
#: A lower-case name made of words and numbers joined by marks: ``claude-3-5-sonnet``,
#: ``utf-8-sig``, ``all-minilm-l6-v2`` (a model or a setting named near "token", not a key).
_SLUG = re.compile(r"^[a-z0-9]+(?:[-_.][a-z0-9]+)+$")


def _looks_like_nearby_password(value: str) -> bool:
    """A value a few words after "password" or "login", with no "is" or ":" to say so: made
    like a credential (letters with digits; symbols with digits or capitals; inner capitals in
    a long word), and none of :data:`_NOT_A_CREDENTIAL`."""
    if not 6 <= len(value) <= 128 or _NOT_A_CREDENTIAL.match(value) or _only_cjk(value):
        return False
    if value.lower() in _NOT_A_VALUE or _TECH_WORD.fullmatch(value):
        return False
    digit = any(c.isdigit() for c in value)
    letter = any(c.isalpha() for c in value)
    symbol = any(not c.isalnum() and c not in "-._'" for c in value)
    inner_capital = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return (
        (digit and letter)
        or (symbol and (digit or inner_capital))
        or (inner_capital and len(value) >= 8)
    )


def _looks_like_nearby_key(value: str) -> bool:
    """A value a few words after "token" or "secret": long and mixed like a machine-made
    string, and not a lower-case name (:data:`_SLUG`)."""
    return _looks_like_key(value) and not _SLUG.match(value) and not _NOT_A_CREDENTIAL.match(value)


#: Characters that end a clause: a value is not looked for past one.
_CLAUSE_END = ".,;!?。，；！？"
#: A word of the text after a keyword: Chinese, Japanese and full-width characters split words
#: ("Secret Service，缩写USSS" is "Secret", "Service", "USSS").
_TOKEN_RE = re.compile(r"[^\s\u3000-\u9fff\uff00-\uffef]+")
_WRAPPERS = "\"'“”‘’`()[]<>「」"


#: Words that may stand between a keyword and its value ("the pw for staging X", "the
#: password of the NAS X"): a preposition and up to two words of its object.
_PREPOSITIONS = frozenset({"for", "of", "to", "on", "at", "in", "from"})


def _first_value(
    check: Callable[[str], bool],
) -> Callable[[re.Match[str]], tuple[int, int] | None]:
    """A :attr:`Detector.pick`: the word right after the keyword when ``check`` takes it
    (quotes, brackets and a clause's end stripped), or the first it takes after a preposition
    and at most two words of its object. Any other word ends the search: in "the password
    manager is 1Password" the keyword names something else."""

    def pick(match: re.Match[str]) -> tuple[int, int] | None:
        base = match.start(1)
        for n, token in enumerate(_TOKEN_RE.finditer(match.group(1))):
            raw = token.group(0)
            word = raw.strip(_WRAPPERS).rstrip(_CLAUSE_END).strip(_WRAPPERS)
            if word and check(word):
                start = base + token.start() + raw.index(word)
                return start, start + len(word)
            if raw.rstrip(_WRAPPERS)[-1:] in _CLAUSE_END:
                return None  # the clause ends here
            if n == 0 and word.lower() not in _PREPOSITIONS:
                return None
        return None

    return pick


def _char_kind(c: str) -> str:
    return "u" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else "o"


def _looks_random(value: str) -> bool:
    """A machine-made string: 20 or more characters, two or more each of capitals, small
    letters and digits, 3.5 bits of entropy a character, and the kind of character changing
    at almost every other step (a CamelCase name or a word with a number changes rarely)."""
    body = value.rstrip("=")
    if len(body) < 20:
        return False
    upper = sum(c.isupper() for c in body)
    lower = sum(c.islower() for c in body)
    digits = sum(c.isdigit() for c in body)
    if min(upper, lower, digits) < 2 or _entropy(body) < 3.5:
        return False
    kinds = [_char_kind(c) for c in body]
    changes = sum(a != b for a, b in itertools.pairwise(kinds))
    return changes / (len(body) - 1) >= 0.45


_NEAR_PASSWORD = (
    r"password|passwd|passphrase|pass ?code|pwd|pw|(?-i:PIN)|pin ?code|log-?in|credentials?"
)
_NEAR_KEY = r"tokens?|secret|api[ _-]?key|access[ _-]?key|auth[ _-]?key|private[ _-]?key"
#: The keyword, then up to four words on the same line (the value is looked for among them).
_NEAR = r"[ \t:=：-]*((?:[^\s]+[ \t]+){0,3}[^\s]+)"
_LOGIN = r"log-?in|user(?:name)?|account|acct|creds?|credentials"
#: Not "login/pass …", the pair (its first value is the login, not a password).
_NOT_A_PAIR = r"(?![ \t]*[/&+:][ \t]*(?:pass(?:word)?|passwd|pwd|pw|pin)\b)"


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


#: Sources of the formats of :func:`detectors`:
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
@functools.cache
def detectors() -> tuple[Detector, ...]:
    """The detectors, most specific first (an overlap keeps the first), compiled on first use:
    a command that writes nothing (a search) does not pay for compiling them."""
    return (
        Detector(
            "private key",
            _rx(
                rf"-----BEGIN {_PEM_LABEL}-----(?:.*?-----END {_PEM_LABEL}-----|{_PEM_BODY})",
                re.S,
            ),
        ),
        Detector("Anthropic API key", _rx(r"\bsk-ant-[A-Za-z0-9]{2,10}-[A-Za-z0-9_-]{20,}")),
        Detector(
            "OpenAI API key",
            _rx(r"\bsk-(?:proj-|svcacct-|admin-|None-)?([A-Za-z0-9_-]{20,})"),
            1,
            _has_body,
        ),
        Detector("GitHub token", _rx(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{40,})")),
        Detector("AWS access key id", _rx(_AWS_KEY_ID)),
        Detector(
            "AWS secret access key",
            _rx(
                r"(?i)aws.{0,20}?secret.{0,20}?(?:[=:：]|\s(?:is|was)\b)\s*[\"']?"
                r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
            ),
            1,
        ),
        # The secret next to its key id (a credentials CSV, "key AKIA… secret wJal…"), either side.
        Detector(
            "AWS secret access key",
            _rx(rf"{_AWS_KEY_ID}[\s\S]{{0,80}}?{_AWS_SECRET}"),
            1,
            _looks_like_aws_secret,
        ),
        Detector(
            "AWS secret access key",
            _rx(rf"{_AWS_SECRET}(?=[\s\S]{{0,80}}?{_AWS_KEY_ID})"),
            1,
            _looks_like_aws_secret,
        ),
        Detector("Slack token", _rx(r"\b(?:xox[abposre]|xapp-\d)-[A-Za-z0-9-]{10,}")),
        Detector(
            "Slack webhook",
            _rx(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{20,}"),
        ),
        Detector("npm token", _rx(r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
        Detector(
            "Hugging Face token",
            _rx(r"\b(?:hf|api_org)_[A-Za-z0-9]{30,40}(?![A-Za-z0-9_])"),
            0,
            lambda value: _has_mixed_case(value.split("_", 1)[1]),
        ),
        Detector("DigitalOcean token", _rx(r"\bdo[opr]_v1_[a-f0-9]{64}(?![a-f0-9])")),
        Detector("Google API key", _rx(r"\bAIza[0-9A-Za-z_-]{35}")),
        Detector("Google OAuth secret", _rx(r"\b(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[\w-]{20,})")),
        Detector(
            "GCP private key id",
            _rx(r"(?i)\bprivate_key_id[\"']?\s*[:=]\s*[\"']?([0-9a-f]{40})(?![0-9a-z])"),
            1,
        ),
        Detector(
            "Azure access key",
            _rx(r"(?i)\b(?:AccountKey|SharedAccessKey)\s*=\s*([A-Za-z0-9+/]{20,}={0,2})"),
            1,
        ),
        Detector(
            "Azure client secret",
            _rx(r"(?<![\w~.-])[\w~.]{3}\dQ~[\w~.-]{31,34}(?![\w~.-])", re.A),
        ),
        Detector("Stripe key", _rx(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{20,}")),
        Detector(
            "JSON web token",
            _rx(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        ),
        Detector(
            "password in a URL",
            _rx(
                r"\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@'\"]{0,64}:([^\s/?#'\"]{3,128})"
                r"@(?:[\w.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?![\w@.-])"
            ),
            1,
            lambda value: not value.startswith(("$", "<", "{", "%", "*")),
        ),
        Detector(
            "bearer token",
            _rx(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)"),
            1,
            _has_digit_and_letter,
        ),
        Detector(
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
        Detector(
            "password",
            _rx(rf"(?i)\b(?:{_PASSWORD_WORDS})[ \t]+({_QUOTED})"),
            1,
            _looks_like_credential,
            _PASSWORD_HINTS,
        ),
        Detector(
            "password",
            _rx(rf"(?i)(?:{_ZH_PASSWORD})\s*{_ZH_SAY}\s*{_ZH_VALUE}"),
            1,
            _looks_like_password,
        ),
        Detector(
            "secret key",
            _rx(rf"(?i)\b(?:{_KEY_WORDS})\b(?:\s*{_SAY}\s*|[ \t]+){_VALUE}"),
            1,
            _looks_like_key,
            ("key", "secret", "token"),
        ),
        Detector(
            "secret key",
            _rx(rf"(?:{_ZH_KEY})\s*{_ZH_SAY}\s*{_ZH_VALUE}"),
            1,
            _looks_like_credential,
        ),
        # "token是…", "api key：…" in a Chinese sentence: the English words ask for a machine-made
        # value, as they do in English ("token = {token}" in a pasted line of code is no secret).
        Detector(
            "secret key",
            _rx(rf"(?i)(?:api ?key|token)\s*{_ZH_SAY}\s*{_ZH_VALUE}"),
            1,
            _looks_like_key,
        ),
        # Chinese needs no verb: "数据库的密码Xk9#2024", "密码 Xk9#2024" (the value decides).
        Detector(
            "password",
            _rx(rf"(?:{_ZH_PASSWORD})[ \t]*{_ZH_VALUE}"),
            1,
            _looks_like_credential,
        ),
        Detector(
            "secret key",
            _rx(rf"(?:{_ZH_KEY})[ \t]*{_ZH_VALUE}"),
            1,
            _looks_like_credential,
        ),
        # A login and its password as a pair: "login/pass: admin / X", "user:pass admin:X".
        Detector(
            "password",
            _rx(
                rf"(?i)\b(?:{_LOGIN})\s*[/&+:]\s*(?:pass(?:word)?|passwd|pwd|pw|pin)\b\s*(?:{_SAY})?"
                r"\s*[\"'“‘`]?[^\s/:\"'”’`]{1,64}[\"'”’`]?\s*[/:]\s*" + _VALUE
            ),
            1,
            _looks_like_password,
            ("pass", "pw", "pin"),
        ),
        # "pass" after a login named a little before it: "login: admin, pass: X".
        Detector(
            "password",
            _rx(rf"(?i)\b(?:{_LOGIN})\b{_NOT_A_PAIR}[^\n]{{0,40}}?\bpass\b\s*{_SAY}\s*{_VALUE}"),
            1,
            _looks_like_password,
            ("pass",),
        ),
        Detector(
            "password",
            _rx(rf"(?i)\b(?:{_LOGIN})\b{_NOT_A_PAIR}[^\n]{{0,40}}?\bpass\b[ \t]+{_VALUE}"),
            1,
            _looks_like_credential,
            ("pass",),
        ),
        # The general rules: a keyword with a credential-like value a few words after it ("wifi
        # password hunter2Blue", "the db pw for staging Xk9#2024q"), and a random-looking string.
        Detector(
            "password",
            _rx(rf"(?i)\b(?:{_NEAR_PASSWORD})\b{_NEAR}"),
            hints=("pass", "pw", "pin", "log", "credential"),
            pick=_first_value(_looks_like_nearby_password),
        ),
        Detector(
            "secret key",
            _rx(rf"(?i)\b(?:{_NEAR_KEY})\b{_NEAR}"),
            hints=("token", "secret", "key"),
            pick=_first_value(_looks_like_nearby_key),
        ),
        Detector(
            "high-entropy string",
            _rx(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_]{20,}={0,2}(?![A-Za-z0-9+/=_-])"),
            0,
            _looks_random,
        ),
    )
