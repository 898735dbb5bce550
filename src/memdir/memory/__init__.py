"""The :class:`~memdir.memory.facade.Memory` facade (``from memdir import Memory``): the one
place that wires workspace, index, embedder and search, and the parts it is assembled from.

- :mod:`~memdir.memory.facade`: ``Memory`` itself: opening a workspace, its providers and
  index, ``search``, ``sync``, ``status``.
- :mod:`~memdir.memory.browse`: reading (``get``, ``files``, the budget and history a person
  browses).
- :mod:`~memdir.memory.lifecycle`: writing (``write``, ``flush``, ``extract``, ``archive``,
  ``capture``, ``dream``).
- :mod:`~memdir.memory.governance`: the history of automatic writes, ``forget``, ``review``,
  team sync.
- :mod:`~memdir.memory.context`: what an agent is shown of memory (bootstrap files, daily
  notes, the recall block), used by the chat agent and Claude Code's hooks.

``Memory`` is one class made of the three mixins of ``browse``, ``lifecycle`` and
``governance``; each mixin names what it needs of ``self`` in a Protocol of its own
(docs/design.md#layers says why the facade stays one class).
"""
