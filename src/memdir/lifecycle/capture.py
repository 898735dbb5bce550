"""Auto-capture: save what the user plainly asks to be remembered, without an LLM
(docs/design.md#lifecycle).

A user message is captured when it is 10–500 characters long, matches a trigger
(:data:`TRIGGERS`: "remember", "I prefer", "we decided", "always", "never", "my X is", a phone
number, an e-mail address; 记住, 我喜欢, 我不喜欢, 以后, 决定, 总是, 不要 …), is not a question,
and does not look like a prompt injection (:func:`memdir.safety.untrusted.looks_like_injection`, the
check every automatic writer applies). At most :data:`MAX_PER_CONVERSATION` messages are
captured per conversation; each is categorised (:func:`categorise`) and appended to today's
daily log through the shared writer, which skips duplicates of what the log already holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from memdir.audit import audited
from memdir.audit.seam import from_session
from memdir.errors import MemdirError
from memdir.lifecycle.write import WriteResult, normalise_memory_text, write_memory
from memdir.markdown.sections import normalise_for_dedup
from memdir.safety.untrusted import looks_like_injection
from memdir.workspace.layout import Workspace

MIN_CHARS = 10
MAX_CHARS = 500
MAX_PER_CONVERSATION = 3

_PHONE = r"(?<![\w+])\+?\d[\d ().-]{7,18}\d(?!\w)"
_EMAIL = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"


def _compile(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.I) for p in patterns)


#: A message must match one of these to be captured.
TRIGGERS = _compile(
    r"\bremember\b",
    r"\bdon'?t forget\b",
    r"\b(?:i|we) (?:really |much |strongly )?(?:prefer|like|love|hate|dislike|want|need)\b",
    r"\bprefer(?:s|red|ence)?\b",
    r"\b(?:i|we)(?: have|'ve)? (?:decided|agreed|chose|settled on)\b",
    r"\bdecided\b",
    r"\b(?:always|never)\b",
    r"\bmy [\w-]+(?: [\w-]+)? (?:is|are)\b",
    r"\bfrom now on\b",
    _PHONE,
    _EMAIL,
    r"记住|记得|别忘了|不要忘记",
    r"我(?:很|最|比较|更)?(?:喜欢|不喜欢|讨厌|偏好|习惯)",
    r"以后|今后|从现在起",
    r"决定|定下来",
    r"总是|永远|一直要|不要|别再",
    r"我的\S{1,12}是",
)

_QUESTION_END_RE = re.compile(r"[?？]\s*$|[吗呢]\s*[。.!！]?\s*$")
_CODE_RE = re.compile(r"```|^\s{4,}\S", re.M)


def matches_trigger(text: str) -> bool:
    """Whether ``text`` contains one of the capture triggers."""
    return any(p.search(text) for p in TRIGGERS)


def categorise(text: str) -> str:
    """``entity``, ``decision``, ``preference``, ``fact`` or ``other``."""
    if re.search(_EMAIL, text) or re.search(_PHONE, text):
        return "entity"
    if re.search(
        r"\b(?:decided|agreed|chose|settled on|will use|going with)\b|决定|定下来|选择了"
        r"|采用",
        text,
        re.I,
    ):
        return "decision"
    if re.search(
        r"\b(?:prefer\w*|like|love|hate|dislike|want|rather)\b|喜欢|讨厌|偏好|习惯|宁愿", text, re.I
    ):
        return "preference"
    if re.search(
        r"\bmy [\w-]+(?: [\w-]+)? (?:is|are)\b|\bis called\b|我的\S{1,12}是|叫做?", text, re.I
    ):
        return "entity"
    # 是/有 mark a statement, but not inside 总是, 还是, 但是 … (a trigger, not a fact).
    if re.search(
        r"\b(?:is|are|was|has|have|uses|runs|lives|works)\b|(?<![总还就但可于只要倒正凡若不])是|有",
        text,
        re.I,
    ):
        return "fact"
    return "other"


def capture_reason(text: str) -> str | None:
    """Why ``text`` is not captured, or None when it is a candidate."""
    stripped = text.strip()
    if not MIN_CHARS <= len(stripped) <= MAX_CHARS:
        return f"length {len(stripped)} is outside {MIN_CHARS}–{MAX_CHARS} characters"
    if stripped.startswith("/"):
        return "a command"
    if not matches_trigger(stripped):
        return "no trigger"
    if _QUESTION_END_RE.search(stripped):
        return "a question"
    if _CODE_RE.search(stripped):
        return "contains code"
    if looks_like_injection(stripped):
        return "looks like a prompt injection"
    return None


@dataclass
class AutoCapture:
    """Captures trigger messages of one conversation (make a new one per conversation).

    Args:
        workspace: where today's daily log is.
        limit: most messages captured in this conversation.
        session: the conversation's id, for the audit record.
    """

    workspace: Workspace
    limit: int = MAX_PER_CONVERSATION
    session: str | None = None
    captured: list[WriteResult] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)

    def consider(self, text: str, *, now: datetime) -> WriteResult | None:
        """Capture ``text`` if it qualifies; return the write (or duplicate skip), else None.

        Never raises: a message that cannot be written is simply not captured.
        """
        if len(self.captured) >= self.limit or capture_reason(text) is not None:
            return None
        try:
            fact = normalise_memory_text(text)
        except MemdirError:
            return None
        key = normalise_for_dedup(fact)
        if key in self._seen:
            return None
        self._seen.add(key)
        category = categorise(fact)
        try:
            with audited(self.workspace, "capture", session=self.session) as op:
                op.describe(f"1 {category}{from_session(self.session)}")
                result = write_memory(
                    self.workspace, f"[{category}] {fact}", target="daily", now=now
                )
        except MemdirError:
            return None
        if result.written:
            self.captured.append(result)
        return result
