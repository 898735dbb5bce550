"""What ``memdir init`` writes: the templates of a new workspace (in English and Chinese), the
example notes of ``--sample``, and the workspace tree itself (docs/design.md#workspace).

The template lines are also what the index leaves out (:data:`TEMPLATE_LINES`): a template
section with nothing written in it is not a memory (docs/design.md, "Structured notes").
"""

from __future__ import annotations

import os
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from memdir.errors import WorkspaceError
from memdir.workspace.layout import (
    AGENTS_FILE,
    MEMORY_DIR,
    MEMORY_FILE,
    SECTION_HEADINGS,
    SKILLS_DIR,
    STATE_DIR,
    USER_FILE,
    Workspace,
    refuse_home_folder,
)

#: ``memdir init``'s files per language (file name → text).
TEMPLATES: dict[str, dict[str, str]] = {
    "en": {
        MEMORY_FILE: (
            "# Long-term memory\n\n"
            "Curated facts worth keeping across sessions. Edit freely: memdir only appends to the\n"
            "section it is told to and never removes what you wrote.\n\n"
            "## Preferences\n\n## Decisions\n\n## Lessons\n\n## Project facts\n\n## Todos\n"
        ),
        USER_FILE: "# User\n\nWho the user is: name, role, time zone, stable preferences.\n",
        AGENTS_FILE: (
            "# Agent\n\nPersona and standing rules for the agent.\n\n"
            "- Search memory before answering questions about prior work, decisions, dates,\n"
            "  people, preferences or todos.\n"
            "- Write durable facts to MEMORY.md and day-to-day notes to memory/YYYY-MM-DD.md.\n"
        ),
    },
    "zh": {
        MEMORY_FILE: (
            "# 长期记忆\n\n"
            "跨会话值得保留的事实。可以随意编辑：memdir 只会在指定的小节追加内容，\n"
            "不会删除你写下的任何文字。\n\n"
            "## 用户偏好\n\n## 核心决策\n\n## 经验教训\n\n## 项目事实\n\n## 待办事项\n"
        ),
        USER_FILE: "# 用户\n\n用户是谁：姓名、角色、时区、稳定的偏好。\n",
        AGENTS_FILE: (
            "# 智能体\n\n智能体的角色与长期规则。\n\n"
            "- 回答有关以往工作、决策、日期、人物、偏好或待办的问题之前，先搜索记忆。\n"
            "- 长期事实写入 MEMORY.md，日常记录写入 memory/YYYY-MM-DD.md。\n"
        ),
    },
}


#: The lines of ``memdir init``'s templates, stripped: not content (docs/design.md, "Structured
#: notes"): a template section with nothing written in it is not indexed, and the template's
#: title is no chunk's context.
TEMPLATE_LINES = frozenset(
    line.strip() for files in TEMPLATES.values() for text in files.values()
    for line in text.splitlines() if line.strip()
)  # fmt: skip


def init_workspace(
    root: Path | str, lang: str = "en", *, sample: bool = False
) -> tuple[Path, list[str]]:
    """Create the workspace tree (docs/design.md#workspace) with templates; never overwrite an
    existing file.

    Args:
        root: the folder to create or complete.
        lang: ``en`` or ``zh`` templates and MEMORY.md headings.
        sample: also add a few example notes (English and Chinese) to try search on.

    Returns:
        The resolved workspace path and the list of files created (relative paths).

    Raises:
        WorkspaceError: the language is unknown or the folder cannot be written.
        PathNotAllowed: a file to write (``.gitignore``, a template) is a symlink.
    """
    if lang not in TEMPLATES:
        raise WorkspaceError(f"unknown language {lang!r}: choose one of {', '.join(TEMPLATES)}")
    path = Path(root).expanduser()
    refuse_home_folder(path)
    created: list[str] = []
    try:
        path.mkdir(parents=True, exist_ok=True)
        path = path.resolve()
        for folder in (MEMORY_DIR, SKILLS_DIR, STATE_DIR):
            (path / folder).mkdir(exist_ok=True)
        workspace = Workspace(path)
        files = dict(TEMPLATES[lang])
        if sample:
            files.update(_sample_files(lang))
        for name, text in files.items():
            if not os.path.lexists(path / name):
                workspace.replace_file(name, text)
                created.append(name)
        try:
            current = workspace.read_file(".gitignore").decode("utf-8", errors="replace")
        except FileNotFoundError:
            current = ""
        lines = current.splitlines()
        if f"{STATE_DIR}/" not in lines and STATE_DIR not in lines:
            workspace.replace_file(".gitignore", "\n".join([*lines, f"{STATE_DIR}/"]) + "\n")
            created.append(".gitignore")
    except OSError as exc:
        raise WorkspaceError(f"cannot create workspace at {path}: {exc.strerror}") from exc
    return path, created


def _sample_files(lang: str = "en") -> dict[str, str]:
    """The example notes shipped in ``memdir/samples`` (relative path → text); MEMORY.md
    under ``lang``'s title and section headings (its facts stay as they are)."""
    base = resources.files("memdir") / "samples"
    out: dict[str, str] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in node.iterdir():
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, rel + "/")
            elif child.name.endswith(".md"):
                out[rel] = child.read_text(encoding="utf-8")

    walk(base, "")
    if lang != "en" and MEMORY_FILE in out:
        out[MEMORY_FILE] = _in_language(out[MEMORY_FILE], lang)
    return out


def _in_language(memory_md: str, lang: str) -> str:
    """An English MEMORY.md under ``lang``'s template title and intro and its section
    headings (``## Preferences`` → ``## 用户偏好``)."""
    headings = {
        f"## {SECTION_HEADINGS['en'][key]}": f"## {title}"
        for key, title in SECTION_HEADINGS[lang].items()
    }
    template = TEMPLATES[lang][MEMORY_FILE]
    head = template[: template.index("\n## ")].rstrip("\n").split("\n")
    lines = memory_md.split("\n")
    first_section = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
    body = [headings.get(line.rstrip(), line) for line in lines[first_section:]]
    return "\n".join([*head, "", *body])


__all__ = ["TEMPLATES", "TEMPLATE_LINES", "init_workspace"]
