"""``memdir init``, ``memdir index`` and ``memdir status``."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from memdir.cli.common import open_memory, print_json, stderr, stdout, styled, visible
from memdir.cli.main import cli
from memdir.config.settings import load_config
from memdir.index.background import EmbedProgress
from memdir.llm.tool_support import tool_refusals
from memdir.workspace.layout import Workspace
from memdir.workspace.templates import init_workspace


@cli.command("init")
@click.argument("path", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--lang",
    type=click.Choice(["en", "zh"]),
    default="en",
    show_default=True,
    help="Language of the templates and MEMORY.md section headings.",
)
@click.option("--sample", is_flag=True, help="Add example notes (English and Chinese) to try.")
@click.option(
    "--git",
    "with_git",
    is_flag=True,
    help="Make the workspace a git repository (unless it is inside one) and commit the files "
    "created; every automatic write then becomes a commit.",
)
@click.pass_context
def init_command(
    ctx: click.Context, path: Path | None, lang: str, sample: bool, with_git: bool
) -> None:
    """Create a workspace (MEMORY.md, USER.md, AGENTS.md, memory/, skills/, .memdir/).

    Existing files are never overwritten. PATH defaults to --workspace.
    """
    root, created = init_workspace(path or ctx.obj, lang, sample=sample)
    out = stdout()
    out.print(f"workspace: {root}")
    if created:
        for name in created:
            out.print(f"  created {name}")
    else:
        out.print("  already initialised; nothing changed")
    if load_config(root).search.bridge:
        from memdir.bridge import default_bridge

        # The bridge's word pairs (once per machine, ~3 s), so that the first search of notes
        # dropped in here finds them in either language (docs/design.md#search).
        default_bridge(wait=True)
    if with_git:
        from memdir.audit.trail import init_git  # dulwich loads only when asked for

        workspace = Workspace(root, audit_git=load_config(root).audit.git)
        repository, commit = init_git(workspace, created)
        done = f"committed {commit[:10]}" if commit else "nothing new to commit"
        out.print(f"git: {repository} ({done}); automatic writes are now commits")


@cli.command("index")
@click.option("--force", is_flag=True, help="Rebuild the whole index from the files.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def index_command(ctx: click.Context, force: bool, as_json: bool) -> None:
    """Index what changed in the workspace (everything with --force)."""
    with open_memory(ctx) as mem:
        err = stderr()
        show_bar = err.is_terminal and not as_json
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            disable=not show_bar,
            transient=True,
        ) as bar:
            tasks: dict[str, TaskID] = {}

            def progress(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    tasks[phase] = bar.add_task(phase, total=total)
                bar.update(tasks[phase], completed=done, total=total)

            report = mem.sync(force=force, progress=progress)
            unindexed = mem.unindexed()
            config_file = mem.config_file
        if as_json:
            print_json(
                {
                    **report.__dict__,
                    "changed": report.changed,
                    "unindexed": unindexed.to_dict(config_file),
                }
            )
            return
        out = stdout()
        out.print(
            f"indexed {report.added} new, {report.updated} changed, {report.removed} removed "
            f"files; {report.chunks_written} chunks written, {report.embedded} embedded "
            f"({report.cache_hits} from cache) in {report.seconds:.1f} s"
        )
        if report.pending_vectors:
            out.print(f"{report.pending_vectors} chunks still need an embedding")
        for warning in report.warnings:
            err.print(styled(f"warning: {warning}"))
        for path, reason in report.skipped:
            err.print(styled(f"skipped: {path}: {reason}"))
        if unindexed.count:
            err.print(styled(f"note: {unindexed.summary(config_file)}"))


def _llm_row(llm: dict[str, str]) -> str:
    model = f" / {llm['model']}" if llm["model"] else ""
    return f"{llm['provider']}{model} ({llm['source']})"


#: A batch of vectors written this recently means some process is embedding now.
ACTIVE_WITHIN_S = 60.0


@cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Show the workspace, index, embedding model, pending work and warnings."""
    with open_memory(ctx) as mem:
        info = mem.status()
    refusals = tool_refusals()
    if as_json:
        print_json({**info, "chat_tool_refusals": [asdict(r) for r in refusals]})
        return
    emb = info["embedding"]
    model = emb["note"] or emb["model"] or "-"
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("workspace", info["workspace"]),
        ("index", info["index_path"]),
        ("mode", info["mode"]),
        (
            "embedding",
            f"{emb['provider']} / {model}" + (f" ({emb['dims']} dims)" if emb["dims"] else ""),
        ),
        ("vector backend", info["vector_backend"]),
        ("llm", _llm_row(info["llm"])),
        ("files", str(info["files"])),
        (
            "chunks",
            f"{info['chunks']} ({info['vectors']} with vectors, {info['pending_vectors']} pending)",
        ),
        ("embedding cache", str(info["cached_embeddings"])),
        (
            "dirty",
            f"{info['dirty_files']} changed, {info['deleted_files']} deleted since last sync",
        ),
    ]
    if info["pending_vectors"]:
        rows.append(("embedding", _embedding_state(info["embedding_progress"])))
    if not info["identity_current"]:
        rows.append(("identity", "changed: the next index or search rebuilds the index"))
    audit = info["audit"]
    trail = (
        f"git commits in {audit['repository']}" if audit["kind"] == "git" else str(audit["file"])
    )
    if audit.get("paused"):
        trail += (
            f"\npaused: {audit['paused']}; writes are recorded in .memdir/audit.jsonl and held back"
        )
    if audit.get("deferred"):
        trail += (
            f"\n{audit['deferred']} write(s) held back, committed with the next write once git "
            "is safe"
        )
    if audit["pending"]:
        trail += f" ({audit['pending']} interrupted write(s) to record: run memdir log)"
    rows.append(("audit trail", trail))
    rows.append(
        (
            "chat tools",
            "native tool calls (no server has refused them)"
            if not refusals
            else "\n".join(
                f"text protocol for {r.where} (tools refused {r.since[:10]}: {r.reason[:80]})"
                for r in refusals
            ),
        )
    )
    for key, value in rows:
        table.add_row(key, Text(visible(value)))
    out = stdout()
    out.print(table)
    for path, warning in info["file_warnings"].items():
        out.print(styled(("warning", "yellow"), f": {path}: {warning}"))
    for note in info["notes"]:
        out.print(styled(("note", "yellow"), f": {note}"))
    if info["unindexed"]["count"]:
        out.print(styled(("not indexed", "yellow"), f": {info['unindexed']['summary']}"))


def _embedding_state(progress: dict[str, Any]) -> str:
    """Where embedding stands, for ``status``: pending, rate, time left, who is doing it."""
    state = EmbedProgress(**progress)
    ago = state.last_batch_seconds_ago
    if ago is not None and ago < ACTIVE_WITHIN_S:
        who = f"a background embed is running (last batch {ago:.0f} s ago)"
    else:
        who = "run `memdir index`, or `memdir serve`/`memdir watch` embed in the background"
    return f"{state.describe()}; {who}"
