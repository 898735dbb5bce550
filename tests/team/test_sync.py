"""``memdir team sync`` against a real bare repository: both hosts' lines kept, no conflict
marker, each automatic write once in the history, a person's uncommitted edits kept and never
pushed, a secret never pushed, a host inside a larger repository refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memdir.cli import cli
from memdir.errors import WorkspaceError
from tests.team.conftest import MARKERS, Host, run_git

DAY = "memory/2026-12-04.md"


def _write(host: Host, *facts: str) -> None:
    with host.memory() as mem:
        for fact in facts:
            mem.write(fact)


def _subjects(host: Host) -> list[str]:
    return host.git("log", "--format=%s").splitlines()


def test_two_hosts_writing_one_day_keep_every_line(team: tuple[Path, list[Host]]) -> None:
    remote, (a, b, _) = team
    _write(a, "the release window moved to wednesday afternoon", "redis runs on port 6380")
    _write(b, "the staging cluster moves to eu-west-2", "发布窗口改到周三下午")
    first = a.sync()
    second = b.sync()
    third = a.sync()
    assert first.pushed and second.merged and second.pushed and third.fast_forward
    for host in (a, b):
        text = host.text(DAY)
        for fact in ("release window", "port 6380", "eu-west-2", "发布窗口改到周三下午"):
            assert text.count(fact) == 1, (host.name, text)
        assert not any(m in text for m in MARKERS)
        assert host.git("status", "--porcelain") == ""
    assert a.text(DAY) == b.text(DAY)
    writes = [s for s in _subjects(a) if s.startswith("write:")]
    assert len(writes) == 4 and len(set(run_git(remote, "log", "--format=%H").split())) >= 6
    assert sum(s.startswith("team: merge") for s in _subjects(a)) == 1
    with a.memory() as mem:  # the other host's facts are searched at once after the sync
        assert any("eu-west-2" in r.snippet for r in mem.search("staging cluster").results)
        assert len([r for r in mem.log() if r.component == "write"]) == 4


def test_memory_sections_merge_and_a_disagreement_goes_to_review(
    team: tuple[Path, list[Host]],
) -> None:
    _, (a, b, _) = team
    base = a.text("MEMORY.md")
    assert "## Decisions" in base and "## Project facts" in base
    text = base.replace("## Project facts\n", "## Project facts\n- the api runs on port 8080\n", 1)
    (a.root / "MEMORY.md").write_text(text, encoding="utf-8")
    a.git("commit", "-qam", "a: the api port")
    a.sync()
    b.sync()
    for host, decision, port in (
        (a, "- deploys go through helm", "8081"),
        (b, "- we freeze deploys on fridays", "9090"),
    ):
        text = host.text("MEMORY.md").replace("port 8080", f"port {port}")
        text = text.replace("## Decisions\n", f"## Decisions\n{decision}\n", 1)
        (host.root / "MEMORY.md").write_text(text, encoding="utf-8")
        host.git("commit", "-qam", f"{host.name}: facts")
    a.sync()
    report = b.sync()
    a.sync()
    merged = b.text("MEMORY.md")
    assert merged == a.text("MEMORY.md")
    assert not any(m in merged for m in MARKERS)
    decisions = merged.split("## Decisions", 1)[1].split("\n## ", 1)[0]
    assert "helm" in decisions and "fridays" in decisions
    facts = merged.split("## Project facts", 1)[1].split("\n## ", 1)[0]
    assert "port 8081" in facts and "port 9090" in facts and "port 8080" not in facts
    assert report.merged
    with b.memory() as mem:
        review = mem.review(since="all")
    pairs = [(d["base"], sorted([*d["ours"], *d["theirs"]])) for d in review.disagreements]
    assert pairs == [
        (
            ["- the api runs on port 8080"],
            ["- the api runs on port 8081", "- the api runs on port 9090"],
        )
    ]
    assert review.counts["disagreements"] == 1


def test_a_persons_uncommitted_edits_are_kept_and_never_pushed(
    team: tuple[Path, list[Host]],
) -> None:
    remote, (a, b, _) = team
    _write(a, "the backup bucket rotates on sundays")
    _write(b, "the on-call rotation starts on mondays")
    with open(b.root / DAY, "a", encoding="utf-8") as fh:
        fh.write("- my own draft line, not committed\n")
    (b.root / "memory" / "draft.md").write_text("# draft\n- untracked\n", encoding="utf-8")
    a.sync()
    b.sync()
    text = b.text(DAY)
    for line in ("backup bucket", "on-call rotation", "my own draft line"):
        assert text.count(line) == 1
    assert "my own draft line" in b.git("diff")  # still the person's, uncommitted
    assert "draft.md" in b.git("status", "--porcelain")
    pushed = run_git(remote, "show", f"main:{DAY}")
    assert "on-call rotation" in pushed and "my own draft line" not in pushed
    assert "draft.md" not in run_git(remote, "ls-tree", "-r", "--name-only", "main")


def test_nothing_is_pushed_when_a_line_looks_like_a_secret(
    team: tuple[Path, list[Host]],
) -> None:
    remote, (a, _, _) = team
    before = run_git(remote, "rev-parse", "main")
    note = a.root / "memory" / "keys.md"
    note.write_text("# keys\n- aws key AKIAIOSFODNN7EXAMPLE for the bucket\n", encoding="utf-8")
    a.git("add", "-A")
    a.git("commit", "-qm", "keys")
    result = CliRunner().invoke(cli, ["-w", str(a.root), "team", "sync"])
    assert result.exit_code == 1
    assert "memory/keys.md:2" in result.output and "nothing pushed" in result.output
    assert "AKIAIOSFODNN7EXAMPLE" not in result.output
    assert run_git(remote, "rev-parse", "main") == before


def test_an_offline_host_catches_up(team: tuple[Path, list[Host]]) -> None:
    _, (a, b, c) = team
    for n in range(3):
        _write(a, f"fact {n} from host a about topic alpha{n}")
        a.sync()
        _write(b, f"fact {n} from host b about topic beta{n}")
        b.sync()
    _write(c, "written while offline on host c")
    c.sync()
    a.sync()
    b.sync()
    for host in (a, b, c):
        text = host.text(DAY)
        assert all(text.count(f"alpha{n}") == 1 and text.count(f"beta{n}") == 1 for n in range(3))
        assert text.count("while offline") == 1
    assert a.text(DAY) == b.text(DAY) == c.text(DAY)


def test_status_and_a_clear_refusal_outside_an_own_repository(
    team_env: None, tmp_path: Path
) -> None:
    outer = tmp_path / "project"
    outer.mkdir()
    run_git(outer, "init", "-q", "-b", "main")
    from memdir import init_workspace

    init_workspace(outer / "notes")
    result = CliRunner().invoke(cli, ["-w", str(outer / "notes"), "team", "sync"])
    assert result.exit_code == 1 and "inside the repository" in result.output
    status = CliRunner().invoke(cli, ["-w", str(outer / "notes"), "team", "status", "--json"])
    assert status.exit_code == 0 and '"remote": "origin"' in status.output


def test_a_missing_remote_is_a_clear_error(team_env: None, tmp_path: Path) -> None:
    from tests.team.conftest import make_team

    _, (a,) = make_team(tmp_path, ("a",))
    with a.memory() as mem, pytest.raises(WorkspaceError, match="git fetch from nowhere"):
        mem.team_sync(remote="nowhere")


def test_a_sync_stopped_after_the_branch_moved_is_finished_by_the_next(
    team: tuple[Path, list[Host]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The branch moved, the files did not (a kill at that instant): HEAD holds the other
    host's facts and the files do not; the next sync writes them, once."""
    from memdir.team import apply

    _, (a, b, _) = team
    _write(a, "the vpn certificate expires in march")
    a.sync()
    _write(b, "the office wifi password rotates monthly on the first")
    real = apply.write_files

    def stopped(*args: object) -> None:
        raise KeyboardInterrupt  # the process dies here

    monkeypatch.setattr(apply, "write_files", stopped)
    with pytest.raises(KeyboardInterrupt):
        b.sync()
    assert (b.root / ".memdir" / apply.PLAN_FILE).exists()
    assert "vpn certificate" in b.git("show", f"HEAD:{DAY}")
    assert "vpn certificate" not in b.text(DAY)
    monkeypatch.setattr(apply, "write_files", real)
    report = b.sync()
    assert any("interrupted" in note for note in report.notes)
    assert b.text(DAY).count("vpn certificate") == 1
    assert b.git("status", "--porcelain") == ""
    assert not (b.root / ".memdir" / apply.PLAN_FILE).exists()
