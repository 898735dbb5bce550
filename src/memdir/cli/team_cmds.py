"""``memdir team sync|status``: one memory for a team, kept in step through git
(docs/design.md#team-memory)."""

from __future__ import annotations

import click

from memdir.cli.common import open_memory, print_json, stderr, stdout, styled
from memdir.cli.main import CommandGroup, cli


@cli.group("team", cls=CommandGroup)
def team_group() -> None:
    """One memory for a team: the workspace's git repository pulled from and pushed to a
    remote, merged with memdir's rules (both sides' lines kept, never a conflict marker).

    The workspace must be its own repository: a clone of the team's remote, or `memdir init
    --git` plus `git remote add origin URL`. The per-user service (`memdir daemon`) syncs each
    open workspace every minute on its own ([team] interval_seconds).
    """


@team_group.command("sync")
@click.option("--remote", default="", help="A git remote's name, URL or path ([team] remote).")
@click.option("--branch", default="", help="Its branch (default: the one checked out).")
@click.option("--json", "as_json", is_flag=True, help="Print what the sync did as JSON.")
@click.pass_context
def sync_command(ctx: click.Context, remote: str, branch: str, as_json: bool) -> None:
    """Pull the team's new memory, merge it, push this host's: daily logs and session archives
    keep both sides' lines, MEMORY.md both sides' bullets per section; lines two hosts changed
    differently are both kept and listed by `memdir review`. Your uncommitted edits stay
    yours; nothing is pushed when a line to push looks like a secret."""
    with open_memory(ctx) as mem:
        report = mem.team_sync(remote=remote, branch=branch)
    if as_json:
        print_json(report.to_dict())
    else:
        out = stdout()
        what = (
            "merged" if report.merged else "fast-forwarded" if report.fast_forward else "up to date"
        )
        pushed = "pushed" if report.pushed else "nothing to push"
        out.print(
            styled(
                (f"{report.remote} {report.branch}", "bold"),
                f": {what}, {pushed}; {len(report.files)} files changed here",
            )
        )
        if report.disagreements:
            out.print(
                f"  {report.disagreements} lines changed differently on two hosts: both kept, "
                "see `memdir review`"
            )
        for note in report.notes:
            out.print(styled(("  " + note, "dim")))
    if report.refused:
        stderr().print(styled(("refused", "red"), f": {report.refused}"))
        ctx.exit(1)


@team_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """The remote and branch a sync uses, the last sync and the disagreements waiting."""
    with open_memory(ctx) as mem:
        status = mem.team_status()
    if as_json:
        print_json(status)
        return
    out = stdout()
    for key, value in status.items():
        out.print(f"{key:>14}: {value if value not in (None, '') else '—'}")
