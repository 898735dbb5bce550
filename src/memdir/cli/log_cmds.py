"""``memdir log``: the history of memdir's automatic writes, newest first."""

from __future__ import annotations

import click
from rich.console import Console

from memdir.audit import AuditRecord
from memdir.cli.common import open_memory, print_json, stdout, styled
from memdir.cli.main import cli


@cli.command("log")
@click.argument("path", required=False)
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many writes to show.",
)
@click.option("--lines", "show_lines", is_flag=True, help="Show the lines each write changed.")
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON.")
@click.pass_context
def log_command(
    ctx: click.Context, path: str | None, limit: int, show_lines: bool, as_json: bool
) -> None:
    """Show what memdir wrote on its own, newest first: flushes, captures, extractions,
    archives, dream promotions, memory_write calls, forgets.

    PATH limits the list to one file (MEMORY.md, memory/2026-12-01.md) or a folder (memory/).
    In a git workspace each entry is a commit (undo one with `git revert <commit>`); otherwise
    the records come from .memdir/audit.jsonl.
    """
    with open_memory(ctx) as mem:
        records = mem.log(path, limit=limit)
        status = mem.audit_status()
    if as_json:
        print_json({"trail": status, "records": [r.to_dict() for r in records]})
        return
    out = stdout()
    if not records:
        where = "git commits" if status["kind"] == "git" else ".memdir/audit.jsonl"
        out.print(f"no automatic writes recorded{' for ' + path if path else ''} ({where})")
        return
    for record in records:
        _print_record(out, record, show_lines)


def _print_record(out: Console, record: AuditRecord, show_lines: bool) -> None:
    ref = record.commit[:10] if record.commit else f"log {record.id[:8]}"
    out.print(
        styled((f"{record.time:%Y-%m-%d %H:%M}", "bold"), f"  {record.message}  ", (ref, "dim"))
    )
    via = f"via {record.via}" if record.via and record.via not in record.summary else None
    details = [x for x in (via, record.note) if x]
    if details:
        out.print(styled(("    " + "; ".join(details), "dim")))
    for change in record.files:
        counts = f"+{len(change.added)}" + (f" -{len(change.removed)}" if change.removed else "")
        out.print(f"    {change.path}  {counts}")
        if show_lines:
            for number, text in change.removed:
                out.print(styled((f"      -{number}: {text}", "red")))
            for number, text in change.added:
                out.print(styled((f"      +{number}: {text}", "green")))
