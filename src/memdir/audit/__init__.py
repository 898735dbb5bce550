"""The audit trail of automatic writes: one seam (:func:`audited`), one record per write.

See :mod:`memdir.audit.seam` for how writers use it, :mod:`memdir.audit.git` for commits and
:mod:`memdir.audit.jsonl` for the log kept when the workspace is not in a git repository.
"""

from memdir.audit.records import COMPONENTS, AuditRecord, FileChange, line_hash
from memdir.audit.rewrite import read_text
from memdir.audit.seam import (
    GIT_MODES,
    Operation,
    append_text,
    audited,
    check_writable,
    recover,
    write_text,
)
from memdir.audit.where import git_trail, log_trail

__all__ = [
    "COMPONENTS",
    "GIT_MODES",
    "AuditRecord",
    "FileChange",
    "Operation",
    "append_text",
    "audited",
    "check_writable",
    "git_trail",
    "line_hash",
    "log_trail",
    "read_text",
    "recover",
    "write_text",
]
