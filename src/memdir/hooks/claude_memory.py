"""Claude Code's own auto memory as one of memdir's extra paths, with the user's consent
(``memdir hooks claude-memory``; docs/design.md#interfaces).

Claude Code keeps its auto memory as Markdown in ``~/.claude/projects/<project>/memory/``
(``$CLAUDE_CONFIG_DIR/projects/…`` when that is set); memdir never turns it off. Beside those
folders the projects folder holds only transcripts (``*.jsonl``), which memdir does not index,
so adding the projects folder to ``[index] extra_paths`` of ``$MEMDIR_HOME/config.toml`` makes
one search cover both memories. :func:`add_extra_path` and :func:`remove_extra_path` edit that
one key and keep the rest of the file as it is.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from memdir.errors import ConfigError
from memdir.workspace.fileio import atomic_write

#: How the entry is written (``~`` keeps the file valid for the same user on another machine).
CLAUDE_PROJECTS = "~/.claude/projects"
_INDEX_HEADER = re.compile(r"^\[index\][ \t]*(#.*)?$", re.M)
_EXTRA_LINE = re.compile(r"^extra_paths[ \t]*=.*$", re.M)


def claude_projects_entry() -> str:
    """The extra path of Claude Code's projects folder (``$CLAUDE_CONFIG_DIR`` honoured)."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return f"{configured.rstrip('/')}/projects" if configured else CLAUDE_PROJECTS


def memory_folders(entry: str) -> list[Path]:
    """The auto-memory folders under the projects folder ``entry``."""
    root = Path(entry).expanduser()
    return sorted(p for p in root.glob("*/memory") if p.is_dir()) if root.is_dir() else []


def extra_paths(config_file: Path) -> list[str]:
    """``[index] extra_paths`` of ``config_file`` (empty when it has none).

    Raises:
        ConfigError: the file is not valid TOML.
    """
    try:
        data = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (tomllib.TOMLDecodeError, OSError) as exc:
        raise ConfigError(f"{config_file}: {exc}") from exc
    index = data.get("index", {})
    value = index.get("extra_paths", []) if isinstance(index, dict) else []
    return [str(v) for v in value] if isinstance(value, list) else []


def add_extra_path(config_file: Path, entry: str) -> bool:
    """Add ``entry`` to ``[index] extra_paths`` of ``config_file``; whether it changed.

    Raises:
        ConfigError: the file is not valid TOML, or its ``extra_paths`` spans several lines
            (then it says what to add by hand).
    """
    current = extra_paths(config_file)
    if entry in current:
        return False
    _write(config_file, [*current, entry])
    return True


def remove_extra_path(config_file: Path, entry: str) -> bool:
    """Take ``entry`` out of ``[index] extra_paths``; whether it was there.

    Raises:
        ConfigError: as :func:`add_extra_path`.
    """
    current = extra_paths(config_file)
    if entry not in current:
        return False
    _write(config_file, [p for p in current if p != entry])
    return True


def _write(config_file: Path, paths: list[str]) -> None:
    text = config_file.read_text(encoding="utf-8") if config_file.exists() else ""
    line = "extra_paths = [" + ", ".join(_quoted(p) for p in paths) + "]"
    header = _INDEX_HEADER.search(text)
    if header is None:
        text = (text.rstrip("\n") + "\n\n" if text.strip() else "") + f"[index]\n{line}\n"
    else:
        section_end = _next_table(text, header.end())
        body = text[header.end() : section_end]
        found = _EXTRA_LINE.search(body)
        if found is not None:
            value = found.group(0).split("=", 1)[1]
            if value.count("[") != value.count("]"):
                raise ConfigError(
                    f"{config_file}: [index] extra_paths spans several lines: add "
                    f"{_quoted(paths[-1]) if paths else ''} to it by hand"
                )
            body = body[: found.start()] + line + body[found.end() :]
        else:
            body = "\n" + line + body
        text = text[: header.end()] + body + text[section_end:]
    tomllib.loads(text)  # never write a file memdir cannot read back
    config_file.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(config_file, text)


def _next_table(text: str, start: int) -> int:
    found = re.compile(r"^\[", re.M).search(text, start)
    return found.start() if found else len(text)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
