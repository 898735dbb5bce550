"""The audit trail of a workspace inside a git repository: one commit per automatic write.

Library: dulwich (pure Python, no ``git`` binary needed; see docs/governance.md for the
comparison with pygit2). The commit is built from objects, never through the person's index:

1. Under the workspace write lock, read HEAD (the branch it points to, or a detached HEAD).
2. For each file memdir wrote, take HEAD's blob and carry memdir's change onto it
   (:func:`memdir.audit.merge.carry_change`), so a person's uncommitted edits in the same file
   stay out of the commit; store the blob, then the trees that lead to it, then the commit
   (author and committer ``memdir``; no hooks run, no signature).
3. Move the branch with a compare-and-swap under git's own ``.lock`` file protocol: if the
   person committed meanwhile, HEAD moved, and the commit is rebuilt on the new HEAD.
4. Bring the person's index up to date for those paths only, as ``git commit --only PATH``
   does: an entry that matched the old HEAD gets the new blob; an entry the person had staged
   gets memdir's change carried onto it; every other entry is left as it was. Without this,
   their next ``git commit`` would silently undo memdir's commit. An index git cannot share
   safely with another writer (split index, sparse index) or one locked for long is left
   alone, with a note.

A process killed while it holds one of git's ``.lock`` files would leave it behind, and every
later ``git commit`` of the person would fail on it. So before taking them, the paths and the
content memdir will write are noted in ``.memdir/audit/git-locks.json`` (no fsync: only a kill,
not a power cut, matters here); the next audited write, under the workspace lock, removes a lock
left by a dead memdir process (:func:`clear_stale_locks`) and nothing else.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat as stat_mod
import time
from collections.abc import Iterator
from pathlib import Path

from dulwich.diff_tree import tree_changes
from dulwich.errors import NotGitRepository
from dulwich.file import FileLocked, GitFile, _GitFile
from dulwich.ignore import IgnoreFilterManager
from dulwich.index import (
    ConflictedIndexEntry,
    IndexChecksumWriter,
    IndexEntry,
    IndexExtension,
    index_entry_from_stat,
    read_index_dict_with_version,
    write_index_dict,
)
from dulwich.object_store import commit_tree_changes, tree_lookup_path
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.refs import HEADREF
from dulwich.repo import Repo

from memdir.audit import gitindex
from memdir.audit.gitlocks import LOCK_MARKER
from memdir.audit.gitmessages import commit_message, commit_time, first_line, trailers
from memdir.audit.merge import carry_change, changed_lines
from memdir.audit.records import AuditRecord, FileChange
from memdir.errors import WorkspaceError

AUTHOR = b"memdir <memdir@localhost>"
#: How often a commit is rebuilt when HEAD keeps moving under it.
CAS_ATTEMPTS = 20
#: How long to wait for a person's git to release ``index.lock``.
INDEX_LOCK_WAIT_S = 2.0
#: Index extensions that describe entries: rewriting the entries makes them stale, so they are
#: dropped (git rebuilds them); the others are kept as they are.
_STALE_EXTENSIONS = {b"TREE", b"EOIE", b"IEOT", b"UNTR", b"FSMN"}
#: Index extensions that mean the entries read are not the whole index: never rewrite it.
_UNSAFE_EXTENSIONS = {b"link", b"sdir"}
_FILE_MODE = 0o100644


class GitTrail:
    """Commits of the repository that holds the workspace.

    Args:
        repo: the repository (its working tree contains the workspace).
        workspace_root: the workspace folder (resolved).
    """

    kind = "git"

    def __init__(self, repo: Repo, workspace_root: Path, state_dir: Path | None = None) -> None:
        self.repo = repo
        self.marker = state_dir / LOCK_MARKER if state_dir is not None else None
        self.worktree = Path(repo.path).resolve()
        rel = workspace_root.resolve().relative_to(self.worktree).as_posix()
        self.prefix = "" if rel == "." else rel + "/"
        self.notes: list[str] = []
        self._started = 0.0
        self._ignore: IgnoreFilterManager | None = None

    @classmethod
    def discover(cls, workspace_root: Path, state_dir: Path | None = None) -> GitTrail | None:
        """The trail of the repository whose working tree holds ``workspace_root``, or None.
        ``state_dir`` (the workspace's ``.memdir``) keeps the note of the locks being taken."""
        try:
            repo = Repo.discover(str(workspace_root))
        except (NotGitRepository, OSError, ValueError):
            return None
        if repo.bare:
            repo.close()
            return None
        try:
            return cls(repo, workspace_root, state_dir)
        except ValueError:  # the workspace is not inside that working tree
            repo.close()
            return None

    def close(self) -> None:
        self.repo.close()

    def repo_path(self, rel: str) -> str:
        """The repository path of a workspace-relative path."""
        return self.prefix + rel

    def workspace_rel(self, repo_path: str) -> str | None:
        """The workspace-relative path of a repository path, or None when outside it."""
        if not repo_path.startswith(self.prefix):
            return None
        return repo_path[len(self.prefix) :]

    def ignored(self, rel: str) -> bool:
        """Whether git ignores this workspace file (it then stays out of commits)."""
        if self._ignore is None:
            self._ignore = IgnoreFilterManager.from_repo(self.repo)
        return bool(self._ignore.is_ignored(self.repo_path(rel)))

    # -- writing ----------------------------------------------------------------------------

    def commit(self, record: AuditRecord, files: dict[str, tuple[str | None, str]]) -> str | None:
        """Commit memdir's change of ``files`` (path → (before, after)) on top of HEAD.

        Returns:
            The commit id, or None when HEAD already holds the change.

        Raises:
            WorkspaceError: HEAD kept moving, or the repository cannot be written.
        """
        try:
            return self._commit(record, files)
        except OSError as exc:
            self._clear_note()
            raise WorkspaceError(f"cannot commit to {self.worktree}: {exc}") from exc

    def _commit(self, record: AuditRecord, files: dict[str, tuple[str | None, str]]) -> str | None:
        store = self.repo.object_store
        self._started = time.time()
        self._note_locks(None, None)  # object files are written under .lock names too
        for _ in range(CAS_ATTEMPTS):
            names, head = self.repo.refs.follow(HEADREF)
            head_tree = self._commit_tree(head) if head is not None else None
            changes: list[tuple[bytes, int | None, ObjectID | None]] = []
            carried: dict[str, tuple[ObjectID | None, ObjectID]] = {}
            for rel, (before, after) in sorted(files.items()):
                path = self.repo_path(rel).encode("utf-8")
                old_mode, old_sha = _lookup(self.repo, head_tree, path)
                base = _blob_text(self.repo, old_sha) if old_sha is not None else ""
                new_text = carry_change(before or "", after, base)
                if old_sha is not None and new_text == base:
                    continue
                blob = Blob.from_string(new_text.encode("utf-8", "surrogateescape"))
                store.add_object(blob)
                changes.append((path, old_mode or _FILE_MODE, blob.id))
                carried[rel] = (old_sha, blob.id)
            if not changes:
                return None
            tree = Tree()
            if head_tree is not None:
                original = store[head_tree]
                assert isinstance(original, Tree)
                copied = original.copy()
                assert isinstance(copied, Tree)
                tree = copied
            tree_id = commit_tree_changes(store, tree, changes)
            commit = _make_commit(tree_id, [head] if head is not None else [], record)
            store.add_object(commit)
            reflog = f"commit (memdir): {record.message}".encode("utf-8", "replace")
            self._note_locks(names[-1], commit.id)
            try:
                if head is None:
                    moved = self.repo.refs.add_if_new(
                        names[-1], commit.id, committer=AUTHOR, message=reflog
                    )
                else:
                    moved = self.repo.refs.set_if_equals(
                        HEADREF, head, commit.id, committer=AUTHOR, message=reflog
                    )
            except FileLocked:
                moved = False  # a person's git holds the branch lock: wait a little, retry
                time.sleep(0.05)
            if moved:
                self._update_index(files, carried, head is None)
                self._clear_note()
                return commit.id.decode("ascii")
        self._clear_note()
        raise WorkspaceError(
            f"{self.worktree}: HEAD kept moving while memdir tried to commit; the change is "
            "written and recorded in .memdir/audit.jsonl instead"
        )

    def advance(self, old: str, new: str, carried: dict[str, tuple[str | None, str]]) -> bool:
        """Move the checked-out branch from commit ``old`` to ``new`` (a compare-and-swap
        under git's lock protocol, its lock noted for :func:`clear_stale_locks`), then the
        person's index entries of ``carried`` (workspace path → old blob, new blob) that were at
        the old blob. Returns False when the branch is no longer at ``old``."""
        names, head = self.repo.refs.follow(HEADREF)
        if head is None or head.decode("ascii") != old:
            return False
        self._started = time.time()
        self._note_locks(names[-1], new.encode("ascii"))
        try:
            moved = self.repo.refs.set_if_equals(
                HEADREF,
                head,
                ObjectID(new.encode("ascii")),
                committer=AUTHOR,
                message=b"memdir team sync",
            )
            if moved and carried:
                shas = {
                    rel: (ObjectID(a.encode()) if a else None, ObjectID(b.encode()))
                    for rel, (a, b) in carried.items()
                }
                self._update_index({}, shas, False, only_from_old=True)
        except FileLocked:
            moved = False
        finally:
            self._clear_note()
        return bool(moved)

    def _note_locks(self, ref: bytes | None, new: bytes | None) -> None:
        if self.marker is None:
            return
        refpath = getattr(self.repo.refs, "refpath", None)
        ref_lock = None
        if ref is not None and refpath is not None:
            ref_lock = os.fsdecode(refpath(ref)) + ".lock"
        note = {
            "pid": os.getpid(),
            "time": self._started,
            "objects": os.fsdecode(self.repo.object_store.path),
            "ref_lock": ref_lock,
            "expect": new.decode("ascii") if new is not None else "",
            "index_lock": os.fsdecode(self.repo.index_path()) + ".lock",
        }
        self.marker.parent.mkdir(parents=True, exist_ok=True)
        self.marker.write_text(json.dumps(note), encoding="utf-8")

    def _clear_note(self) -> None:
        if self.marker is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.marker)

    def _commit_tree(self, commit_id: ObjectID) -> ObjectID:
        commit = self.repo.object_store[commit_id]
        assert isinstance(commit, Commit)
        tree: ObjectID = commit.tree
        return tree

    def _update_index(
        self,
        files: dict[str, tuple[str | None, str]],
        carried: dict[str, tuple[ObjectID | None, ObjectID]],
        was_unborn: bool,
        only_from_old: bool = False,
    ) -> None:
        index_path = self.repo.index_path()
        if not os.path.exists(index_path) and not was_unborn:
            return  # no index at all: nothing of the person's to keep in step
        lock = _lock_index(index_path)
        if lock is None:
            self.notes.append(
                "git's index is locked by another git command: run `git status`; paths memdir "
                "committed may show as staged changes until `git reset -q -- <path>`"
            )
            return
        try:
            data = _read_bytes(index_path)
            if not self._splice_index(lock, data, files, carried, only_from_old):
                self._rewrite_index(lock, index_path, files, carried, only_from_old)
        except BaseException:
            lock.abort()
            raise

    def _target_sha(
        self,
        rel: str,
        carried: tuple[ObjectID | None, ObjectID],
        current: ObjectID | None,
        files: dict[str, tuple[str | None, str]],
        only_from_old: bool,
    ) -> ObjectID | None:
        """The blob the person's index entry should get, or None to leave it."""
        old_sha, new_sha = carried
        if current is None:
            return new_sha if old_sha is None else None  # else: the person staged its deletion
        if current == old_sha:
            return new_sha
        if only_from_old or current == new_sha:
            return None
        # The person staged their own version: carry memdir's change onto it.
        before, after = files[rel]
        staged = _blob_text(self.repo, current)
        blob = Blob.from_string(
            carry_change(before or "", after, staged).encode("utf-8", "surrogateescape")
        )
        self.repo.object_store.add_object(blob)
        sha: ObjectID = blob.id
        return sha

    def _splice_index(
        self,
        lock: _GitFile,
        data: bytes | None,
        files: dict[str, tuple[str | None, str]],
        carried: dict[str, tuple[ObjectID | None, ObjectID]],
        only_from_old: bool,
    ) -> bool:
        """The fast path (:mod:`memdir.audit.gitindex`); False when it does not apply."""
        if data is None:
            data = gitindex.EMPTY_INDEX
        index = gitindex.parse_index(data)
        if index is None:
            return False
        updates: dict[bytes, tuple[bytes, int, gitindex.Stat]] = {}
        for rel, pair in carried.items():
            key = self.repo_path(rel).encode("utf-8")
            found = [index.entry(i) for i in index.positions(key)]
            if any(e.stage != 0 for e in found):
                continue  # a merge conflict on this path: leave it to the person
            entry = found[0] if found else None
            now = ObjectID(entry.sha.hex().encode("ascii")) if entry is not None else None
            sha = self._target_sha(rel, pair, now, files, only_from_old)
            if sha is not None:
                mode = entry.mode if entry is not None else _FILE_MODE
                updates[key] = (bytes.fromhex(sha.decode("ascii")), mode, self._stat(rel, sha))
        if not updates:
            lock.abort()
            return True
        spliced = gitindex.splice(index, updates)
        if spliced is None:
            return False
        lock.write(spliced)
        lock.close()
        return True

    def _rewrite_index(
        self,
        lock: _GitFile,
        index_path: str,
        files: dict[str, tuple[str | None, str]],
        carried: dict[str, tuple[ObjectID | None, ObjectID]],
        only_from_old: bool,
    ) -> None:
        """The slow path: dulwich reads and writes every entry (index version 4 and the like)."""
        entries, version, extensions, unsafe = _read_index(index_path)
        if unsafe:
            lock.abort()
            self.notes.append(
                "split or sparse git index left alone: run `git reset -q -- <path>` for "
                "the paths memdir committed"
            )
            return
        for rel, pair in carried.items():
            key = self.repo_path(rel).encode("utf-8")
            entry = entries.get(key)
            if isinstance(entry, ConflictedIndexEntry):
                continue
            sha = self._target_sha(
                rel, pair, entry.sha if entry is not None else None, files, only_from_old
            )
            if sha is not None:
                entries[key] = self._entry(rel, sha, entry)
        kept = [ext for ext in extensions if ext.signature not in _STALE_EXTENSIONS]
        writer = IndexChecksumWriter(lock)
        write_index_dict(writer, entries, version=version, extensions=kept)
        writer.close()

    def _stat(self, rel: str, sha: ObjectID) -> gitindex.Stat:
        """The working file's stat data when it holds exactly that blob (git then sees it
        clean), else zeros (git re-reads the file)."""
        st = self._matching_stat(rel, sha)
        if st is None:
            return gitindex.Stat()
        return gitindex.Stat(
            (int(st.st_ctime), st.st_ctime_ns % 1_000_000_000),
            (int(st.st_mtime), st.st_mtime_ns % 1_000_000_000),
            st.st_dev,
            st.st_ino,
            st.st_uid,
            st.st_gid,
            st.st_size,
        )

    def _matching_stat(self, rel: str, sha: ObjectID) -> os.stat_result | None:
        location = self.worktree / self.repo_path(rel)
        with contextlib.suppress(OSError):
            st = os.lstat(location)
            if stat_mod.S_ISREG(st.st_mode) and Blob.from_string(location.read_bytes()).id == sha:
                return st
        return None

    def _entry(self, rel: str, sha: ObjectID, old: IndexEntry | None) -> IndexEntry:
        """A dulwich index entry for ``sha`` (see :meth:`_stat`)."""
        flags = old.flags if old is not None else 0
        extended = old.extended_flags if old is not None else 0
        st = self._matching_stat(rel, sha)
        if st is not None:
            return index_entry_from_stat(st, sha, flags=flags, extended_flags=extended)
        return IndexEntry(
            ctime=0,
            mtime=0,
            dev=0,
            ino=0,
            mode=_FILE_MODE,
            uid=0,
            gid=0,
            size=0,
            sha=sha,
            flags=flags,
            extended_flags=extended,
        )

    # -- reading ----------------------------------------------------------------------------

    def head(self) -> str | None:
        _, head = self.repo.refs.follow(HEADREF)
        return head.decode("ascii") if head is not None else None

    def records(self, *, with_lines: bool = True) -> Iterator[AuditRecord]:
        """memdir's commits reachable from HEAD, newest first."""
        _, head = self.repo.refs.follow(HEADREF)
        if head is None:
            return
        for entry in self.repo.get_walker(include=[head]):
            commit = entry.commit
            found = trailers(commit.message)
            record_id = found.get("Memdir-Id")
            if record_id is None:
                continue
            files = self._file_changes(commit, with_lines)
            yield AuditRecord(
                id=record_id,
                time=commit_time(commit),
                component=found.get("Memdir-Component", "write"),
                summary=first_line(commit.message).partition(": ")[2] or "",
                files=tuple(files),
                session=found.get("Memdir-Session"),
                via=found.get("Memdir-Via"),
                commit=commit.id.decode("ascii"),
            )

    def find(self, record_id: str, depth: int = 500) -> Commit | None:
        """The commit with this record id among HEAD's last ``depth`` commits, or None."""
        _, head = self.repo.refs.follow(HEADREF)
        if head is None:
            return None
        for n, entry in enumerate(self.repo.get_walker(include=[head])):
            if n >= depth:
                return None
            if trailers(entry.commit.message).get("Memdir-Id") == record_id:
                commit: Commit = entry.commit
                return commit
        return None

    def finish_index(self, commit: Commit, files: dict[str, tuple[str | None, str]]) -> None:
        """Bring the person's index in step with a memdir commit whose writer was killed before
        it could (entries still at the parent's blobs move on; others stay)."""
        parent_tree = self._commit_tree(commit.parents[0]) if commit.parents else None
        carried: dict[str, tuple[ObjectID | None, ObjectID]] = {}
        for rel in files:
            path = self.repo_path(rel).encode("utf-8")
            _, new_sha = _lookup(self.repo, commit.tree, path)
            if new_sha is not None:
                carried[rel] = (_lookup(self.repo, parent_tree, path)[1], new_sha)
        self._update_index(files, carried, not commit.parents, only_from_old=True)

    def blob_at(self, commit_id: str, rel: str) -> str | None:
        """A workspace file's text in a commit, or None when it is not there."""
        tree = self._commit_tree(ObjectID(commit_id.encode("ascii")))
        _, sha = _lookup(self.repo, tree, self.repo_path(rel).encode("utf-8"))
        return _blob_text(self.repo, sha) if sha is not None else None

    def _file_changes(self, commit: Commit, with_lines: bool) -> list[FileChange]:
        parent_tree = self._commit_tree(commit.parents[0]) if commit.parents else None
        out = []
        for change in tree_changes(self.repo.object_store, parent_tree, commit.tree):
            old, new = change.old, change.new
            raw = (new.path if new is not None and new.path else None) or (
                old.path if old is not None else None
            )
            if raw is None:
                continue
            rel = self.workspace_rel(raw.decode("utf-8", "replace"))
            if rel is None:
                continue
            if not with_lines:
                out.append(FileChange(rel))
                continue
            before = _blob_text(self.repo, old.sha) if old is not None and old.sha else ""
            after = _blob_text(self.repo, new.sha) if new is not None and new.sha else ""
            removed, added = changed_lines(before, after)
            out.append(FileChange(rel, tuple(removed), tuple(added)))
        return out


def _lookup(repo: Repo, tree: ObjectID | None, path: bytes) -> tuple[int | None, ObjectID | None]:
    if tree is None:
        return None, None
    try:
        mode, sha = tree_lookup_path(repo.object_store.__getitem__, tree, path)
    except (KeyError, NotADirectoryError):
        return None, None
    except Exception:  # dulwich raises NotTreeError when a parent is a file
        return None, None
    if not stat_mod.S_ISREG(mode):
        return None, None
    return mode, sha


def _blob_text(repo: Repo, sha: ObjectID) -> str:
    blob = repo.object_store[sha]
    assert isinstance(blob, Blob)
    return blob.as_raw_string().decode("utf-8", "surrogateescape")


def _make_commit(tree: ObjectID, parents: list[ObjectID], record: AuditRecord) -> Commit:
    commit = Commit()
    commit.tree = tree
    commit.parents = parents
    commit.author = commit.committer = AUTHOR
    seconds = int(record.time.timestamp())
    offset = record.time.utcoffset()
    zone = int(offset.total_seconds()) if offset is not None else 0
    commit.author_time = commit.commit_time = seconds
    commit.author_timezone = commit.commit_timezone = zone
    commit.encoding = b"UTF-8"
    commit.message = commit_message(record).encode("utf-8", "surrogateescape")
    return commit


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def _lock_index(index_path: str) -> _GitFile | None:
    deadline = time.monotonic() + INDEX_LOCK_WAIT_S
    while True:
        try:
            return GitFile(index_path, "wb")
        except FileLocked:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)


def _read_index(
    index_path: str,
) -> tuple[dict[bytes, IndexEntry | ConflictedIndexEntry], int | None, list[IndexExtension], bool]:
    """The entries, version and extensions of an index, and whether it must not be rewritten:
    it has an extension whose name starts lowercase (git's mark of one a reader must
    understand: a split index's ``link``, a sparse index's ``sdir``), which dulwich stops at."""
    try:
        fh = open(index_path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return {}, None, [], False
    with fh:
        entries, version, extensions = read_index_dict_with_version(fh)
        size = os.fstat(fh.fileno()).st_size
        stop = fh.tell()
        signature = fh.read(4)
    required = (size - stop > 20 and len(signature) == 4 and 97 <= signature[0] <= 122) or any(
        ext.signature in _UNSAFE_EXTENSIONS for ext in extensions
    )
    return dict(entries), version, list(extensions), required
