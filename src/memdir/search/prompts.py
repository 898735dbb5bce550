"""The question inside a prompt (docs/design.md#working-memory, "Auto-recall"): what
auto-recall searches for when a person types a prompt as people do — a question wrapped in
instructions, pasted code, a config file, a log or a stack trace — and when it should search
for nothing at all.

A whole prompt makes a poor query: 40 lines of Go outweigh the one line that asks "what retry
policy did we agree on?", so the search either finds notes about Go or nothing above the
recall threshold. :func:`recall_query` keeps the person's own words (:func:`prose_lines`: the
lines that are neither code nor log), splits them into sentences and keeps the questions
(:func:`is_question`). A prompt without a question is an instruction ("rewrite this with a
pipeline", "给这个函数加注释") when it holds pasted material or asks for work; it recalls
nothing, since no note answers it. A short message that is neither (a companion chat's "I'm
thinking of Kyoto again") is searched as written, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The query is at most this long (a question, not an essay).
MAX_QUERY_CHARS = 600
#: A question shorter than this takes the sentence before it along (what "it" is).
SHORT_QUESTION_CHARS = 40
#: Without a question, prose longer than this is an instruction, not a remark to recall for.
MAX_REMARK_CHARS = 400

_CJK = re.compile(r"[\u3400-\u9fff]")
_FENCE = re.compile(r"^\s*(```|~~~)")
# A line of code: indented by a tab or 4+ spaces, or shaped like a statement, or mostly symbols.
_INDENT = re.compile(r"^(\t| {4,})\S")
_CODE_SHAPE = re.compile(
    r"""^\s*(?:
        [{}()\[\];]+[,;]?\s*$                                  # a lone brace or bracket
      | (?:func|def|class|public|private|protected|static|import|from|package|return|const|let
         |var|val|fun|struct|interface|enum|type|if|else|for|while|switch|case|try|catch
         |finally|SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|WITH|FROM|WHERE|resource|module
         |provider|variable|@\w+|\#include|\#!|//|/\*|\*|--|\$)\b
      | [\w.$]+\s*(?:[:+\-*/]?=|:=|=>|->)\s*\S                 # an assignment or arrow
      | [\w.\-]+:\s*(?:\S.*)?$                                 # a YAML / config key
      | \w[\w.]*\(.*\)\s*[;{]?\s*$                             # a call on its own
    )""",
    re.VERBOSE,
)
# A line of a log or a stack trace.
_LOG_SHAPE = re.compile(
    r"""^\s*(?:
        \d{4}-\d{2}-\d{2}[T\s]\d{1,2}:\d{2}                    # 2026-11-28 10:02:14
      | \[?\d{1,2}:\d{2}:\d{2}                                 # 10:02:14
      | \[?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL|PANIC|E|W|I)\]?[\s:]
      | at\s+[\w$.<>]+\(.*\)                                   # Java / Kotlin frames
      | File\s+".*",\s+line\s+\d+                              # Python frames
      | Traceback\b | Caused\sby: | goroutine\s\d+ | panic: | Exception\b | \w+(?:Error|Exception):
      | \#\d+\s+0x[0-9a-f]+                                    # native frames
      | [\w/.\-]+\.\w+:\d+(?::\d+)?                            # path:line(:col)
      | ={5,} | -{5,} | \^\s*$                                  # separators, carets
    )""",
    re.VERBOSE,
)
# A method call, or a line ending like a statement or a block.
_CODE_LIKE = re.compile(r"\w\.\w+\(|[{};]\s*$|^[}\])]")
_SYMBOLS = re.compile(r"[{}()\[\];=<>|&$\\`\"'/_*#@~^]")
_WORD = re.compile(r"[A-Za-z]{2,}")
_SENTENCE = re.compile(r"(?<=[?？!！。；;])\s*|(?<=[.])\s+|\n+")
_QUESTION_END = re.compile(r"[?？]\s*$")
_EN_QUESTION_START = re.compile(
    r"^(?:\W*)(?:what|when|where|who|whom|whose|which|how|why|is|are|was|were|do|does|did|can"
    r"|could|should|would|will|have|has|had|any\s+idea|remind\s+me|tell\s+me|do\s+you\s+"
    r"(?:know|remember))\b",
    re.IGNORECASE,
)
_ZH_QUESTION = re.compile(
    r"什么|啥|哪|谁|多少|怎么|如何|为何|为什么|是否|有没有|是不是|能不能|要不要"
    r"|(?<!好)几[点天个号月年次]|[吗呢嘛]\s*[。！]?\s*$|来着"
)
_ZH_CLAUSE = re.compile(r"[，,；;、：:]")
# Asking memory itself ("remind me", "帮我查一下") is a question whatever the verb.
_EN_ASK = re.compile(
    r"\b(?:remind\s+me|do\s+you\s+(?:know|remember)|can\s+you\s+(?:check|look\s+up|find|tell)"
    r"|look\s+up|what\s+(?:was|is|were|are|did)\b)",
    re.IGNORECASE,
)
_ZH_ASK = re.compile(r"提醒我|记得.*[吗么]|查一下|帮我查|帮我找|找一下|看一下|告诉我|回忆一下")
_EN_INSTRUCTION = re.compile(
    r"^(?:\W*)(?:please\s+)?(?:write|rewrite|fix|add|remove|refactor|convert|explain|rename|make"
    r"|create|implement|generate|update|change|replace|move|delete|translate|wrap|split|merge"
    r"|optimi[sz]e|clean|format|document|comment|review|port|migrate|turn|use|give|show|help"
    r"|build|set\s+up|draft|summari[sz]e|debug|test|run|check)\b",
    re.IGNORECASE,
)
_ZH_INSTRUCTION = re.compile(
    r"(?:^|[，,。；：:\s])(?:请|麻烦|顺便|另外|然后|再|也|先)?(?:帮我|帮忙|给我|给这|把|写一|写个|改成|改写|重写|修掉|修复|修一下"
    r"|加上|加个|加注释|实现|生成|优化|重构|转换|转成|翻译|解释|整理|总结|补充|删掉|去掉|换成|写一下)"
    r"|[写说讲]清楚|写出来|改一下"
)


@dataclass(frozen=True)
class RecallQuery:
    """What to search for a prompt: ``query`` ("" when nothing should be recalled) and why
    (``"question"``, ``"remark"``, ``"instruction"`` or ``"empty"``)."""

    query: str
    kind: str


def _is_code_or_log(line: str) -> bool:
    stripped = line.strip()
    if not stripped:
        return False
    if _LOG_SHAPE.match(line) or _INDENT.match(line):
        return True
    if _CJK.search(stripped):
        # Chinese words in a line make it prose unless it is a comment or a log line.
        return bool(re.match(r"^\s*(?://|#|/\*|\*|--)\s", line))
    if _CODE_LIKE.search(stripped):
        return True
    if _CODE_SHAPE.match(line):
        first = stripped.split(maxsplit=1)[0]
        # "Where's the console?" asks; "WHERE e.warehouse = 'KS02'" is SQL.
        if first.isupper() or not _EN_QUESTION_START.match(stripped):
            return True
    symbols = len(_SYMBOLS.findall(stripped))
    words = len(_WORD.findall(stripped))
    # A line of two words is a fragment of code when it holds a symbol ("x = 1", "end;"), but
    # plain words ("db port?") are a person typing tersely.
    return (words < 3 and symbols > 0) or symbols > 0.12 * len(stripped)


def prose_lines(prompt: str) -> tuple[list[str], bool]:
    """The person's own lines of ``prompt``, and whether it also held pasted material (a
    fenced block, code, a config, a log or a stack trace)."""
    prose: list[str] = []
    pasted = False
    fenced = False
    for line in prompt.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            pasted = True
            continue
        if fenced or not line.strip():
            continue
        if _is_code_or_log(line):
            pasted = True
            continue
        prose.append(line.strip())
    return prose, pasted


def sentences(lines: list[str]) -> list[str]:
    """The sentences of ``lines`` (split after ``? ？ ! ！ 。 ；`` and a full stop)."""
    out = []
    for line in lines:
        out += [s.strip() for s in _SENTENCE.split(line) if s and s.strip()]
    return out


def is_question(sentence: str) -> bool:
    """Whether ``sentence`` asks something: it ends with a question mark, opens like an English
    question, or holds a Chinese question word without asking for work first."""
    if _EN_ASK.search(sentence) or _ZH_ASK.search(sentence):
        return True
    if _EN_INSTRUCTION.match(sentence):  # "Explain what this regex accepts: ^(\+?65)?"
        return False
    if len(_WORD.findall(sentence)) < 2 and len(_CJK.findall(sentence)) < 2:
        return False  # a fragment: "65)?" of a pasted regex
    if _QUESTION_END.search(sentence) or _EN_QUESTION_START.match(sentence):
        return True
    if _is_instruction(sentence):  # "给这个函数加注释，尤其是 bisect 为什么要减 1"
        return False
    return bool(_ZH_QUESTION.search(sentence))


def _is_instruction(sentence: str) -> bool:
    return bool(_EN_INSTRUCTION.match(sentence) or _ZH_INSTRUCTION.search(sentence))


def _short(question: str) -> bool:
    # A Chinese character says about as much as an English word.
    return len(question) + 3 * len(_CJK.findall(question)) < SHORT_QUESTION_CHARS


def recall_query(prompt: str) -> RecallQuery:
    """What auto-recall searches for ``prompt`` (see the module docstring)."""
    prose, pasted = prose_lines(prompt)
    said = sentences(prose)
    if not said:
        return RecallQuery("", "empty")
    asked = [i for i, s in enumerate(said) if is_question(s)]
    if asked:
        # A short question ("What was it exactly?") takes the sentence before it along.
        keep = sorted(
            set(asked)
            | {
                i - 1
                for i in asked
                if i > 0 and _short(said[i]) and not _is_instruction(said[i - 1])
            }
        )
        return RecallQuery(" ".join(said[j] for j in keep)[:MAX_QUERY_CHARS], "question")
    text = " ".join(said)
    if pasted or len(text) > MAX_REMARK_CHARS or any(_is_instruction(s) for s in said):
        return RecallQuery("", "instruction")
    return RecallQuery(text[:MAX_QUERY_CHARS], "remark")
