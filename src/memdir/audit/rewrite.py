"""memdir's change to a file, made on the text that is there when the file is replaced.

A writer reads a file (``base``), computes its edit (``text``), and replaces the file. A
person takes no lock: ``echo "- x" >> MEMORY.md`` or an editor's save may land in between.
:func:`rewrite` replaces the file only while it still holds what the edit was made on
(:meth:`memdir.workspace.layout.Workspace.update_file`); when it changed, memdir's change ``base`` →
``text`` is carried onto the person's text, line by line
(:func:`memdir.audit.merge.carry_change`: memdir's added lines placed after the line they
followed, its removed lines removed where the person's text still has them), and the replace
is tried again. So a person's bytes are never dropped (docs/design.md#files-are-the-truth).
"""

from __future__ import annotations

from memdir.audit.merge import carry_change
from memdir.errors import WorkspaceError
from memdir.workspace.layout import Workspace

#: How often :func:`rewrite` redoes its change on a file that keeps changing under it.
REDO_ATTEMPTS = 20


def read_text(workspace: Workspace, rel: str) -> str | None:
    """A workspace file's text (bytes that are not UTF-8 kept as surrogates), or None when it
    does not exist (:meth:`memdir.workspace.layout.Workspace.read_file`: no symlink, no special
    file)."""
    try:
        return decode(workspace.read_file(rel))
    except FileNotFoundError:
        return None


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def rewrite(workspace: Workspace, rel: str, base: str | None, text: str) -> str:
    """Replace ``rel``, which held ``base`` (None: no file) when ``text`` was made from it,
    with ``text`` — or with the same change carried onto what a person made of the file since.

    Returns:
        The text the file holds once written.

    Raises:
        WorkspaceError: the file kept changing for :data:`REDO_ATTEMPTS` tries.
    """
    expected, target = base, text
    for _ in range(REDO_ATTEMPTS):
        swap = workspace.update_file(rel, expected, target)
        if swap.status == "swapped":
            return target + decode(swap.carried)
        now = None if swap.now is None else decode(swap.now)
        if swap.status == "changed":
            target = carry_change(base or "", text, now or "")
        else:  # displaced: ours is in place, theirs was edited; keep what reached ours since
            redone = carry_change(base or "", text, decode(swap.theirs))
            target = carry_change(target, now or "", redone)
        expected = now
    raise WorkspaceError(
        f"{rel} kept changing while memdir wrote it ({REDO_ATTEMPTS} tries); check that "
        "memdir's change is in it, or try again"
    )


__all__ = ["REDO_ATTEMPTS", "decode", "read_text", "rewrite"]
