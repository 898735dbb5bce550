"""The audit trail in a git repository: one commit per automatic write, checked with git."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from memdir import Memory, ScriptedLLM
from memdir.audit.trail import init_git, read_trail, trail_status
from memdir.lifecycle.flush import run_memory_flush
from memdir.lifecycle.write import write_memory
from memdir.llm import Message
from memdir.workspace.layout import Workspace
from memdir.workspace.templates import init_workspace
from tests.audit.conftest import GitRunner

NOW = datetime(2026, 12, 1, 9, 30)


def added_lines(diff: str) -> list[str]:
    return [x[1:] for x in diff.splitlines() if x.startswith("+") and not x.startswith("+++")]


TODAY = "memory/2026-12-01.md"


def test_each_write_is_a_commit_by_memdir(repo: Path, git: GitRunner) -> None:
    ws = Workspace(repo / "ws")
    write_memory(ws, "The staging DB listens on port 5433", now=NOW, via="MCP memory_write")
    log = git(repo, "log", "--format=%an <%ae>|%s", "-n", "2").splitlines()
    assert log == [
        "memdir <memdir@localhost>|write: via MCP memory_write",
        "Pat Person <pat@example.org>|person: start",
    ]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [f"ws/{TODAY}"]
    body = git(repo, "log", "-1", "--format=%B")
    assert "Memdir-Component: write" in body and "Memdir-Via: MCP memory_write" in body
    assert git(repo, "status", "--porcelain") == ""
    assert trail_status(ws)["kind"] == "git"


def test_persons_staged_and_unstaged_changes_are_left_alone(repo: Path, git: GitRunner) -> None:
    ws = repo / "ws"
    # The person has work in progress: a staged and an unstaged change in their own file, an
    # unstaged line and a staged line in MEMORY.md itself, and a new untracked file.
    (repo / "notes.txt").write_text("the person's file\nstaged line\n", encoding="utf-8")
    git(repo, "add", "notes.txt")
    with (repo / "notes.txt").open("a", encoding="utf-8") as fh:
        fh.write("unstaged line\n")
    memory_md = ws / "MEMORY.md"
    memory_md.write_text(memory_md.read_text() + "- person staged fact\n", encoding="utf-8")
    git(repo, "add", "ws/MEMORY.md")
    memory_md.write_text(memory_md.read_text() + "- person unstaged fact\n", encoding="utf-8")
    (repo / "draft.txt").write_text("untracked\n", encoding="utf-8")
    staged_notes = git(repo, "diff", "--cached", "notes.txt")
    unstaged_notes = git(repo, "diff", "notes.txt")

    write_memory(
        Workspace(ws), "We chose Postgres 16", target="memory", section="decisions", now=NOW
    )

    # The commit holds memdir's line only.
    assert added_lines(git(repo, "show", "--format=", "HEAD")) == ["- We chose Postgres 16"]
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["ws/MEMORY.md"]
    # The person's staged and unstaged changes are exactly as they were.
    assert git(repo, "diff", "--cached", "notes.txt") == staged_notes
    assert git(repo, "diff", "notes.txt") == unstaged_notes
    assert added_lines(git(repo, "diff", "--cached", "ws/MEMORY.md")) == ["- person staged fact"]
    assert added_lines(git(repo, "diff", "ws/MEMORY.md")) == ["- person unstaged fact"]
    assert "?? draft.txt" in git(repo, "status", "--porcelain")
    # The person's next commit keeps memdir's line (their index was carried forward).
    git(repo, "commit", "-q", "-m", "person: wip")
    assert "- We chose Postgres 16" in git(repo, "show", "HEAD:ws/MEMORY.md")
    assert "- person unstaged fact" not in git(repo, "show", "HEAD:ws/MEMORY.md")


def test_workspace_is_the_repository_root(tmp_path: Path, git: GitRunner) -> None:
    root, created = init_workspace(tmp_path / "mine")
    ws = Workspace(root)
    repository, commit = init_git(ws, created)
    assert repository == str(root) and commit is not None
    assert git(root, "log", "--format=%s").splitlines() == ["init: workspace templates"]
    write_memory(ws, "Ana owns the release checklist", now=NOW)
    assert git(root, "log", "-1", "--format=%an %s") == "memdir write: 3 lines in " + TODAY + "\n"
    assert git(root, "status", "--porcelain") == ""


def test_files_git_ignores_go_to_the_log(repo: Path, git: GitRunner) -> None:
    (repo / ".gitignore").write_text("ws/memory/\n", encoding="utf-8")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore daily logs")
    ws = Workspace(repo / "ws")
    write_memory(ws, "A private daily note", now=NOW)
    assert git(repo, "log", "-1", "--format=%s") == "ignore daily logs\n"
    [record] = read_trail(ws)
    assert record.commit is None and record.note == "ignored by git"
    assert (repo / "ws" / ".memdir" / "audit.jsonl").exists()


def test_flush_commit_message_and_revert_undoes_it(repo: Path, git: GitRunner) -> None:
    llm = ScriptedLLM()
    llm.enqueue("- Redis moved to port 6380\n- Ana owns CI")
    run_memory_flush(
        Workspace(repo / "ws"), [Message("user", "x")], llm, now=NOW, session="7f3c9a2b5e"
    )
    assert git(repo, "log", "-1", "--format=%s") == "flush: 2 facts from session 7f3c9a2b…\n"
    git(repo, "revert", "--no-edit", "HEAD")
    assert not (repo / "ws" / TODAY).exists()


def test_memory_log_reads_commits(repo: Path, git: GitRunner) -> None:
    with Memory(repo / "ws") as mem:
        mem.write("Alpha runs on port 1000", via="memdir remember")
        mem.write("Beta is owned by Ana", target="memory", section="facts")
        newest, oldest = mem.log()
    assert newest.paths == ["MEMORY.md"] and oldest.via == "memdir remember"
    assert newest.commit == git(repo, "rev-parse", "HEAD").strip()
    assert newest.files[0].added == ((13, "- Beta is owned by Ana"),)


def test_head_moved_by_the_person_is_built_upon(repo: Path, git: GitRunner) -> None:
    ws = Workspace(repo / "ws")
    write_memory(ws, "first memdir fact", now=NOW)
    (repo / "notes.txt").write_text("changed by the person\n", encoding="utf-8")
    git(repo, "commit", "-q", "-am", "person: edit notes")
    write_memory(ws, "second memdir fact", now=NOW)
    subjects = git(repo, "log", "--format=%s").splitlines()
    assert subjects[:3] == [
        "write: 1 line in memory/2026-12-01.md",
        "person: edit notes",
        "write: 3 lines in memory/2026-12-01.md",
    ]
    assert git(repo, "status", "--porcelain") == ""


def test_index_versions_and_split_index(repo: Path, git: GitRunner) -> None:
    """Index v2/v3 are spliced, v4 is rewritten by dulwich, a split index is left alone."""
    ws = Workspace(repo / "ws")
    for n, version in enumerate(("3", "4")):
        git(repo, "update-index", "--index-version", version)
        written = (repo / ".git" / "index").read_bytes()[4:8]  # git may keep 2 for "3"
        write_memory(ws, f"fact for index version {version} number {n}", now=NOW)
        assert git(repo, "status", "--porcelain") == "", version
        assert (repo / ".git" / "index").read_bytes()[4:8] == written
    git(repo, "update-index", "--index-version", "2")
    git(repo, "update-index", "--split-index")
    assert list((repo / ".git").glob("sharedindex.*"))
    before = (repo / ".git" / "index").read_bytes()
    with Memory(repo / "ws") as mem:
        mem.write("fact with a split index")
    assert (repo / ".git" / "index").read_bytes() == before  # untouched
    assert git(repo, "log", "-1", "--format=%s") == "write: via Memory.write\n"
    git(repo, "fsck", "--no-dangling")


def test_splice_matches_git(repo: Path, git: GitRunner) -> None:
    from memdir.audit.gitindex import Stat, parse_index, splice

    data = (repo / ".git" / "index").read_bytes()
    parsed = parse_index(data)
    assert parsed is not None
    names = parsed.names
    assert names == sorted(names) and b"notes.txt" in names
    blob = git(repo, "hash-object", "-w", "--stdin", check=True)  # empty blob
    sha = bytes.fromhex(blob.strip())
    out = splice(
        parsed, {b"notes.txt": (sha, 0o100644, Stat()), b"aaa/new.md": (sha, 0o100644, Stat())}
    )
    assert out is not None
    (repo / ".git" / "index").write_bytes(out)
    staged = git(repo, "ls-files", "-s")
    assert f"100644 {blob.strip()} 0\taaa/new.md" in staged
    assert f"100644 {blob.strip()} 0\tnotes.txt" in staged
    assert staged.count("\n") == len(names) + 1
