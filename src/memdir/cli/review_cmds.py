"""``memdir review``: the weekly report; it proposes and never writes."""

from __future__ import annotations

import click
from rich.console import Console

from memdir.cli.common import open_memory, print_json, stdout, styled
from memdir.cli.main import cli
from memdir.review import Fact, ReviewReport

SHOWN = 10


@cli.command("review")
@click.option(
    "--since",
    default="7d",
    show_default=True,
    help="Pairs with a side changed in this window: 7d, 2w, 12h, an ISO date, or all.",
)
@click.option(
    "--todo-days",
    type=click.IntRange(min=0),
    default=None,
    help="Open todos (and daily notes never recalled) older than this many days "
    "(default: [audit] todo_days, 14).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def review_command(ctx: click.Context, since: str, todo_days: int | None, as_json: bool) -> None:
    """A report to read once a week: near-duplicate facts (both places), likely contradictions
    (one subject, different ports, versions, dates or owners), open todos grown old, the
    MEMORY.md budget and what dreaming evicts first, daily notes no search ever recalled, and
    files not indexed. It proposes (with the command to act); it never changes a file.
    """
    with open_memory(ctx) as mem:
        report = mem.review(since=since, todo_days=todo_days)
    if as_json:
        print_json(report.to_dict())
        return
    _print(stdout(), report)


def _print(out: Console, report: ReviewReport) -> None:
    counts = report.counts
    out.print(
        styled(("memdir review", "bold"), f" (changes in: {report.since}; {counts['facts']} facts)")
    )
    _section(out, "Near duplicates", counts["duplicates"])
    for pair in report.duplicates[:SHOWN]:
        out.print(f"  {pair.similarity:.2f}  {_place(pair.a)}")
        out.print(f"        {_place(pair.b)}")
    if report.duplicates:
        out.print("  → keep one: `memdir forget PATH#Ln` removes the other")
    _section(out, "Likely contradictions", counts["contradictions"])
    for pair in report.contradictions[:SHOWN]:
        out.print(f"  {pair.kind} {pair.values[0]} vs {pair.values[1]}:")
        out.print(f"    {_place(pair.a)}")
        out.print(f"    {_place(pair.b)}")
    if report.contradictions:
        out.print("  → settle it: edit the wrong one, or `memdir forget PATH#Ln --force`")
    if report.disagreements:
        _section(out, "Changed differently on two hosts", len(report.disagreements))
        for item in report.disagreements[:SHOWN]:
            where = f"{item['path']}" + (f" ({item['section']})" if item.get("section") else "")
            out.print(f"  {where}: was {' / '.join(item['base'])[:80]}")
            out.print(f"    here:  {' / '.join(item['ours'])[:100]}")
            out.print(f"    there: {' / '.join(item['theirs'])[:100]}")
        out.print("  → `memdir team sync` kept both: delete the one that is wrong")
    _section(out, "Open todos grown old", counts["todos"])
    for todo in report.todos[:SHOWN]:
        age = f"{todo.age_days} days" if todo.exact else f"over {todo.age_days} days"
        out.print(f"  {age:>14}  {_place(todo.fact)}")
    if report.todos:
        out.print("  → done? tick it ([x]) or `memdir forget PATH#Ln`")
    budget = report.budget
    if budget is not None:
        over = budget.chars > budget.budget
        out.print()
        out.print(
            styled(
                ("MEMORY.md budget", "bold"),
                f": {budget.chars:,} / {budget.budget:,} chars ({budget.person_chars:,} yours, "
                f"{budget.generated_chars:,} promoted)",
                (" — over budget" if over else "", "red"),
            )
        )
        if budget.next_evicted:
            out.print("  evicted first when dreaming needs room:")
            for line, text in budget.next_evicted[:5]:
                out.print(f"    MEMORY.md#L{line}  {text[:100]}")
    _section(out, "Daily notes never recalled", counts["never_recalled"])
    for fact in report.never_recalled[:SHOWN]:
        out.print(f"  {_place(fact)}")
    if report.never_recalled:
        out.print("  → still useful? dreaming only promotes what searches recall")
    _section(out, "Not indexed", counts["not_indexed"])
    for item in report.not_indexed[:SHOWN]:
        out.print(f"  {item['path']}: {item['why']}")
    if report.not_indexed:
        out.print("  → `memdir index` catches up")


def _section(out: Console, title: str, count: int) -> None:
    out.print()
    out.print(styled((title, "bold"), f": {count if count else 'none'}"))


def _place(fact: Fact) -> str:
    return f"{fact.citation}  {fact.text.strip()[:100]}"
