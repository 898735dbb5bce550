"""Load the lifecycle's prompts, which live as Markdown files, one per prompt.

The files are ``memdir/lifecycle/prompts/<name>.md`` inside the installed package, read with
:mod:`importlib.resources` (so they work from a wheel or a zip too) and never inlined in code.
"""

from __future__ import annotations

import re
from importlib import resources

from memdir.errors import MemdirError

#: The package holding the prompts and the folders below it.
PROMPTS_PACKAGE = "memdir"
PROMPTS_PATH = ("lifecycle", "prompts")

_NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]*")


def load_prompt(name: str) -> str:
    """Return the text of the prompt called ``name`` (``compact`` → ``compact.md``).

    Raises:
        MemdirError: the name is not a plain lower-case name, or no such prompt file exists
            (a broken install: reinstall memdir).
    """
    if not _NAME_RE.fullmatch(name):
        raise MemdirError(
            f"prompt name {name!r} is not valid: use lower-case letters, digits, '-' and '_'"
        )
    where = "/".join((PROMPTS_PACKAGE, *PROMPTS_PATH, f"{name}.md"))
    try:
        resource = resources.files(PROMPTS_PACKAGE).joinpath(*PROMPTS_PATH, f"{name}.md")
        return resource.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, ModuleNotFoundError) as exc:
        raise MemdirError(
            f"prompt {name!r} not found: expected the file {where} in the installed package "
            f"(reinstall memdir if it is missing)"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise MemdirError(f"prompt {name!r} cannot be read from {where} ({exc})") from exc
