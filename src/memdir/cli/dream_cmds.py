"""``memdir dream``: preview or apply the promotion of recalled daily notes into MEMORY.md."""

from __future__ import annotations

import click

from memdir.cli.common import open_memory, print_json, stderr, stdout, styled
from memdir.cli.main import cli
from memdir.dreaming import DreamReport, PromotionCandidate
from memdir.dreaming.scoring import CONSOLIDATION_WINDOW_DAYS, DIVERSITY_TARGET

PREVIEW_TEXT_CHARS = 110


@cli.command("dream")
@click.option("--apply", is_flag=True, help="Write the promotions to MEMORY.md (default: preview).")
@click.option(
    "--schedule",
    is_flag=True,
    help="The nightly run: schedule gates (0.8, 3 recalls, 3 queries, notes ≤ 30 days old, "
    "≤ 10 a run); writes like --apply and prints only a one-line summary.",
)
@click.option(
    "--explain",
    "explain_key",
    metavar="KEY",
    help="Show how one entry's score is made (KEY from the preview); writes nothing.",
)
@click.option("--diary", is_flag=True, help="When writing, also append a summary to DREAMS.md.")
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many entries the preview lists.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@click.pass_context
def dream_command(
    ctx: click.Context,
    apply: bool,
    schedule: bool,
    explain_key: str | None,
    diary: bool,
    limit: int,
    as_json: bool,
) -> None:
    """Promote daily notes that searches keep recalling into MEMORY.md (light, REM, deep).

    Without --apply it shows what would be promoted and writes nothing. MEMORY.md is kept under
    10,000 chars by evicting the oldest promoted entries; text a person wrote is never removed.
    """
    if explain_key is not None and (apply or diary):
        raise click.UsageError("--explain only reads: drop --apply/--diary")
    write = (apply or schedule) and explain_key is None
    with open_memory(ctx) as mem:
        report = mem.dream(apply=write, schedule=schedule, diary=diary)
    if explain_key is not None:
        candidate = report.find(explain_key)
        if as_json:
            print_json(candidate.to_dict())
        else:
            _print_explain(report, candidate)
        return
    if as_json:
        print_json(report.to_dict())
        return
    for warning in report.warnings:
        stderr().print(styled(("note", "yellow"), f": {warning}"))
    if schedule:
        click.echo(report.summary())
        return
    _print_report(report, limit)


def _print_report(report: DreamReport, limit: int) -> None:
    out = stdout()
    title = "dream" if report.applied else "dream preview"
    out.print(
        f"{title} {report.now:%Y-%m-%d %H:%M} · {report.gates.name} gates: "
        f"{report.gates.describe()}",
    )
    light = report.light
    notes = ", ".join(light.notes) or "no daily notes from the last 2 days"
    out.print(
        f"light: {notes}; {light.blocks} blocks, {len(light.candidates)} after dedupe",
    )
    themes = ", ".join(
        f"{t.tag} ({t.strength:.2f}: {t.entries} entries, {t.days} days)" for t in report.themes
    )
    out.print(f"REM: {themes or 'no recurring themes yet'}")
    open_entries = [c for c in report.candidates if c.entry.promoted_at is None]
    chosen = [c for c in open_entries if c.selected]
    out.print(
        f"deep: {len(report.candidates)} recalled entries, {len(chosen)} pass the gates, "
        f"{len(report.candidates) - len(open_entries)} promoted earlier",
    )
    if not report.candidates:
        out.print("nothing recalled from the daily logs yet: search first (`memdir search`)")
    for candidate in open_entries[:limit]:
        _print_candidate(candidate, applied=report.applied)
    if len(open_entries) > limit:
        out.print(f"  … {len(open_entries) - limit} more (--limit, or --json for all)")
    for line in report.promotion.evicted:
        verb = "evicted" if report.applied else "would evict"
        out.print(f"  {verb}: {_short(line)}")
    out.print(report.summary())
    if report.diary:
        out.print(f"diary: {report.diary}")
    if not report.applied:
        out.print(
            "preview only, nothing written: `memdir dream --apply` writes, "
            "`memdir dream --explain KEY` shows how a score is made",
        )


def _print_candidate(candidate: PromotionCandidate, *, applied: bool) -> None:
    entry = candidate.entry
    status = candidate.status
    if candidate.failures:
        status = "below gates: " + "; ".join(candidate.failures)
    elif not applied:
        status = {"promoted": "promote", "over budget": "over budget: would not fit"}.get(
            status, f"would skip: {status}"
        )
    stdout().print(
        f"  {entry.key}  {candidate.score:.3f}  {entry.recall_count} recalls  "
        f"{entry.unique_queries} queries  {len(entry.days)} days  {entry.citation}  {status}",
        highlight=False,
    )
    if candidate.outcome is not None:
        for line in candidate.outcome.lines:
            stdout().print(f"      + {_short(line)}")


def _print_explain(report: DreamReport, candidate: PromotionCandidate) -> None:
    out = stdout()
    entry, factors = candidate.entry, candidate.factors
    out.print(f"{entry.key}  {entry.citation}")
    out.print(f"snippet: {_short(entry.snippet.replace(chr(10), ' / '), 300)}")
    out.print(
        f"recalls {entry.recall_count} · unique queries {entry.unique_queries} · days "
        f"{len(entry.days)} · first {entry.first_recalled:%Y-%m-%d %H:%M} · last "
        f"{entry.last_recalled:%Y-%m-%d %H:%M} · tags: {', '.join(entry.tags) or '-'}",
    )
    age = (report.now - entry.last_recalled).total_seconds() / 86400
    span = (entry.last_recalled.date() - entry.first_recalled.date()).days
    theme_tags = {tag for t in report.themes for tag in (t.variants or (t.tag,))}
    in_themes = [t for t in entry.tags if t in theme_tags]
    strongest = next(
        (t for t in report.themes if set(t.variants or (t.tag,)) & set(entry.tags)), None
    )
    notes = {
        "frequency": f"ln(1 + {entry.recall_count}) / ln 11, capped at 1",
        "relevance": f"mean of {entry.recall_count} recall scores (best {entry.max_score:.3f})",
        "diversity": f"max({entry.unique_queries} queries, {len(entry.days)} days) / "
        f"{DIVERSITY_TARGET}",
        "recency": f"last recall {age:.1f} days ago, half-life 14 days",
        "consolidation": f"recalls span {span} days of {CONSOLIDATION_WINDOW_DAYS}",
        "conceptual": f"{len(in_themes)} of {len(entry.tags)} tags are REM themes",
    }
    rows = factors.to_dict()
    out.print(f"{'factor':<15}{'value':>8}{'weight':>8}{'part':>8}  why")
    for name, note in notes.items():
        row = rows[name]
        out.print(
            f"{name:<15}{row['value']:>8.3f}{row['weight']:>8.2f}{row['contribution']:>8.3f}  "
            f"{note}",
        )
    light_note = "from the last 2 days' daily notes" if factors.light else "not in recent notes"
    rem_note = f"strongest theme {strongest.tag}" if strongest else "no REM theme among its tags"
    for name, note in (("light_boost", light_note), ("rem_boost", rem_note)):
        row = rows[name]
        out.print(
            f"{name:<15}{row['value']:>8.3f}{'≤' + format(row['max'], '.2f'):>8}"
            f"{row['contribution']:>8.3f}  {note}",
        )
    out.print(f"{'score':<15}{'':>16}{factors.score:>8.3f}")
    if entry.promoted_at is not None:
        verdict = f"promoted on {entry.promoted_at:%Y-%m-%d %H:%M}"
    elif candidate.failures:
        verdict = "not promoted: " + "; ".join(candidate.failures)
    else:
        verdict = "passes: promoted by `memdir dream --apply`"
    out.print(f"{report.gates.name} gates ({report.gates.describe()}): {verdict}")


def _short(text: str, limit: int = PREVIEW_TEXT_CHARS) -> str:
    text = text.split(" <!-- memdir:promoted ", 1)[0].removeprefix("- ")
    return text if len(text) <= limit else text[: limit - 1] + "…"
