"""``memdir forget``: show, then remove, lines of memory for good."""

from __future__ import annotations

import click

from memdir.cli.common import open_memory, print_json, stdout
from memdir.cli.main import cli
from memdir.lifecycle.forget import ForgetLine


@cli.command("forget")
@click.argument("target")
@click.option("--apply", is_flag=True, help="Remove the lines (default: only show them).")
@click.option("--force", is_flag=True, help="Also remove lines a person wrote.")
@click.option(
    "-n",
    "--results",
    type=click.IntRange(min=1, max=50),
    default=10,
    show_default=True,
    help="How many search hits a query looks at.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.pass_context
def forget_command(
    ctx: click.Context, target: str, apply: bool, force: bool, results: int, as_json: bool
) -> None:
    """Forget TARGET: PATH#Lx or PATH#Lx-Ly (a search citation), or a query (the lines of its
    best hits that carry most of its words).

    Shows what would be removed; --apply removes it. Lines memdir wrote go freely, lines a person
    wrote only with --force. The removal is recorded (a commit: undo with `git revert`; or
    .memdir/audit.jsonl with the removed text), the index is updated at once, and dreaming will
    never promote the forgotten lines again.
    """
    with open_memory(ctx) as mem:
        result = mem.forget(
            target, apply=apply, force=force, max_results=results, via="memdir forget"
        )
    if as_json:
        print_json(result.to_dict())
        return
    out = stdout()
    if not result.lines:
        out.print(f"nothing matches {target!r}: nothing to forget")
        return
    if not result.applied:
        out.print(f"would remove {len(result.lines)} line(s) (preview; --apply removes them):")
        for line in result.lines:
            out.print(_row(line, force))
        return
    for line in result.removed:
        out.print(f"removed  {_row(line, True).strip()}")
    for line in result.refused:
        out.print(f"kept     {_row(line, False).strip()}")
    for warning in result.warnings:
        out.print(f"note: {warning}")
    if result.commit:
        short = result.commit[:10]
        out.print(f"recorded as commit {short}: undo with `git revert {short}`")
    elif result.record:
        out.print(
            f"recorded in .memdir/audit.jsonl ({result.record[:8]}): `memdir log --lines` shows "
            "the removed text to put back"
        )
    if result.refused:
        out.print("lines a person wrote were kept: add --force to remove them too")


def _row(line: ForgetLine, force: bool) -> str:
    who = "memdir" if line.generated else "person"
    needs = "" if line.generated or force else "   (a person's line: needs --force)"
    return f"  {line.citation}  [{who}]  {line.text}{needs}"
