"""One memory for a team: the workspace's git repository kept in step with a remote
(docs/design.md#team-memory).

- :mod:`.merge` — how two versions of a memory file become one (lines of both sides, never a
  conflict marker; what both changed differently kept and reported).
- :mod:`.trees` — merging two commits in git objects (dulwich).
- :mod:`.apply` — moving the branch, the files and the person's index to a commit, finished
  after a kill.
- :mod:`.transport` — fetch and push with the ``git`` program.
- :mod:`.disagreements` — what ``memdir review`` lists of lines two hosts changed differently.
- :mod:`.sync` — ``memdir team sync``, composing them.
"""

from memdir.team.sync import TeamReport, checked_out_branch, sync_workspace

__all__ = ["TeamReport", "checked_out_branch", "sync_workspace"]
