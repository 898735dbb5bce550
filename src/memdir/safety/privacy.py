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

The detectors (:mod:`memdir.safety.secret_detectors`, sources there) are token formats published by
their issuers and patterns widely used by secret scanners: OpenAI, Anthropic, GitHub, AWS key
ids and secret keys, Slack, npm, Hugging Face, DigitalOcean, Google and GCP, Azure, Stripe,
JWTs, PEM private keys, passwords in URLs, bearer tokens; phrasing in English and Chinese:
"password is …", "the pw is …", "login/pass: admin / …", "secret access key is …", "api
secret …", "wifi pass: '…'", "密码是：…", "数据库的密码…", "口令是 …", "秘钥是 …"; and two
general rules (issue 35): a value that looks like a credential a few words after a keyword
("wifi password hunter2Blue", "the deploy token for staging gH7k…"), and a random-looking run
of 20 or more letters and digits. They are written for notes, not code: a phrase needs a value
that looks like a credential (not an ordinary word after "is"; digits, symbols or inner
capitals when nothing stands between keyword and value), so "the token is valid",
"密码是什么", "密码忘了", "改密码" or "the password manager is 1Password" stay as they are.

A text is checked whole: a secret over several lines (a PEM private key from ``-----BEGIN`` to
``-----END``) is one finding, and a writer that stores lines one by one (the flush) checks them
together first (:meth:`SecretGuard.redact_lines`), so no line of it is kept. A
``[REDACTED:<kind>]`` marker is never redacted again. ``benchmarks/secrets_fp.py`` measures the
detectors on a secrets corpus and on normal notes, line by line and whole (docs/reliability.md
has the figures, with detect-secrets for comparison).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from memdir.config.settings import SECRET_ACTIONS
from memdir.errors import ConfigError, MemdirError
from memdir.safety.secret_detectors import Detector, detectors

REDACTED = "[REDACTED:{kind}]"


class SecretRefused(MemdirError):
    """A fact was not written because it holds something that looks like a secret."""


@dataclass(frozen=True)
class Finding:
    """One secret: its kind (``GitHub token``, ``password``…) and where it is in the text."""

    kind: str
    start: int
    end: int


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
        extra: list[Detector] = []
        for pattern in extra_patterns:
            try:
                extra.append(Detector("custom", re.compile(pattern)))
            except re.error as exc:
                raise ConfigError(
                    f"privacy.secret_patterns: {pattern!r} is not a regex ({exc})"
                ) from exc
        self.extra = tuple(extra)

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
        for detector in (*detectors(), *self.extra):
            if detector.hints and not any(hint in lowered for hint in detector.hints):
                continue
            for match in detector.pattern.finditer(text):
                span = detector.pick(match) if detector.pick else _checked_span(detector, match)
                if span is None:
                    continue
                start, end = span
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


def _checked_span(detector: Detector, match: re.Match[str]) -> tuple[int, int] | None:
    """Where the detector's group is in the text, when its check takes the value."""
    start, end = match.span(detector.group)
    if start < 0 or end <= start:
        return None
    if detector.check is not None and not detector.check(match.group(detector.group)):
        return None
    return start, end


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
