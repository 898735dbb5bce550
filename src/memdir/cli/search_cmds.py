"""``memdir search`` and ``memdir get``."""

from __future__ import annotations

import click
from rich.text import Text

from memdir.cli.common import open_memory, print_json, stderr, stdout, styled, visible
from memdir.cli.main import cli
from memdir.config.settings import MAX_RESULTS


@cli.command("search")
@click.argument("query", nargs=-1)
@click.option(
    "-q",
    "--query",
    "more",
    multiple=True,
    help="Another query to search in the same call (repeatable); each gets reserved results.",
)
@click.option(
    "-v",
    "--variant",
    "variants",
    multiple=True,
    help="The same question written otherwise, e.g. in the notes' other language "
    "(repeatable); searched with it as one question.",
)
@click.option(
    "-n",
    "--max-results",
    type=click.IntRange(min=1, max=MAX_RESULTS),
    help=f"How many results (at most {MAX_RESULTS}).",
)
@click.option("--min-score", type=click.FloatRange(min=0.0, max=1.0), help="Score threshold.")
@click.option("--json", "as_json", is_flag=True, help='Print {"results": [...], ...} as JSON.')
@click.option(
    "--explain",
    is_flag=True,
    help="Show each score's parts (vector, text, coverage, fused, decay, rerank, focus line, MMR).",
)
@click.pass_context
def search_command(
    ctx: click.Context,
    query: tuple[str, ...],
    more: tuple[str, ...],
    variants: tuple[str, ...],
    max_results: int | None,
    min_score: float | None,
    as_json: bool,
    explain: bool,
) -> None:
    """Search memory (hybrid vector + keyword, reranked) and print the best snippets.

    Words given without quotes form one query; several queries (`memdir search "redis port"
    -q "kafka topic"`) are searched in one call, each with reserved results. A variant
    (`memdir search "积分改版什么时候上线" -v "when does the points redesign launch"`) is the
    same question asked otherwise, searched with it as one.
    """
    queries = [" ".join(query)] if query else []
    queries += list(more)
    if not queries:
        raise click.UsageError("give a query: memdir search WORDS… [-q ANOTHER]…")
    with open_memory(ctx) as mem:
        response = mem.search(
            queries, max_results=max_results, min_score=min_score, variants=variants
        )
    if as_json:
        print_json(response.to_dict(explain=explain))
        return
    out = stdout()
    for warning in response.warnings:
        stderr().print(styled(("note", "yellow"), f": {warning}"))
    if not response.results:
        hint = " (nothing in these notes is about it; --min-score 0 shows the closest)"
        out.print("no results" + (hint if response.calibrated else ""))
        return
    for rank, hit in enumerate(response.results, start=1):
        where = f"  ({hit.context})" if hit.context else ""
        out.print(styled((f"{rank}. {hit.citation}", "bold"), f"{where}  score {hit.score:.3f}"))
        if explain:
            parts = ", ".join(f"{k} {v}" for k, v in hit.explain.items())
            out.print(styled("   ", (parts, "dim")))
        for line in hit.snippet.splitlines():
            out.print(Text(visible(f"   {line}", tabs=True)))
        out.print()
    if explain:
        from rich.table import Table  # only here: a plain search starts without it

        table = Table("mode", "legs", "terms", "queries")
        table.add_row(
            response.mode,
            ", ".join(response.legs),
            " ".join(response.terms),
            " | ".join(response.queries),
        )
        out.print(table)


@cli.command("get")
@click.argument("path")
@click.option("--from", "from_line", type=click.IntRange(min=1), help="First line (1-based).")
@click.option("--lines", type=click.IntRange(min=1), help="How many lines.")
@click.option("--copy", help="Read another host's copy (a search hit's `copy`), shared index only.")
@click.option("--json", "as_json", is_flag=True, help="Print {path, text, ...} as JSON.")
@click.pass_context
def get_command(
    ctx: click.Context,
    path: str,
    from_line: int | None,
    lines: int | None,
    copy: str | None,
    as_json: bool,
) -> None:
    """Print a memory file or a line range of it (MEMORY.md, memory/**, skills/**)."""
    with open_memory(ctx) as mem:
        result = mem.get(path, from_line=from_line, lines=lines, copy=copy)
    if as_json:
        print_json(result.to_dict())
        return
    if not result.exists:
        stderr().print(styled(("note", "yellow"), f": {result.path} does not exist (empty)"))
        return
    if result.copy:
        stderr().print(styled(("note", "yellow"), f": {result.note}"))
    click.echo(result.text, nl=not result.text.endswith("\n"))
