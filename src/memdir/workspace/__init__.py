"""The workspace on disk (docs/design.md#workspace) and the safe ways to touch it
(docs/design.md#path-safety).

- :mod:`~memdir.workspace.layout`: the layout (``MEMORY.md``, ``memory/``, ``.memdir/``) and
  the one path policy for what memdir reads and writes
  (:class:`~memdir.workspace.layout.Workspace`).
- :mod:`~memdir.workspace.templates`: what ``memdir init`` writes.
- :mod:`~memdir.workspace.fileio`, :mod:`~memdir.workspace.fileswap`,
  :mod:`~memdir.workspace.filewalk`: the bytes themselves: read and written without following a
  symlink, a file replaced only while it holds what the edit was made on, a folder listed
  without leaving it. They know nothing of memdir's data (layer 0 of docs/design.md#layers).
"""
