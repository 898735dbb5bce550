"""How ranked chunks become results (:func:`memdir.search.placement.place_results`) and how
fusion sees both legs for every candidate (``search.score_both_legs``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import memdir.memory.facade as memory_module
from memdir import FakeEmbedder, Memory
from memdir.config.settings import load_config
from memdir.index.base import ChunkRow
from memdir.markdown.structure import PACK_TOKENS
from memdir.search import relevance
from memdir.search.placement import place_results
from memdir.search.types import Candidate
from tests.helpers import write

FILE = [f"[L{n}] " + "word " * 10 for n in range(1, 21)]  # 20 lines of 61 chars


def chunk(seq: int, start: int, end: int, path: str = "memory/a.md") -> Candidate:
    text = "\n".join(FILE[start - 1 : end])
    return Candidate(ChunkRow(seq, f"id{seq}", path, "memory", start, end, text), score=1.0 / seq)


def test_overlapping_chunks_are_trimmed_and_never_repeat_a_line() -> None:
    ranked = [chunk(1, 5, 8), chunk(2, 7, 10), chunk(3, 6, 7), chunk(4, 15, 16)]
    results = place_results(ranked, 6, {}, 10_000)
    spans = [(r.start_line, r.end_line) for r in results]
    assert spans == [(5, 8), (9, 10), (15, 16)]  # chunk 3 is all shown: skipped
    assert results[1].snippet == "\n".join(FILE[8:10])
    assert results[1].citation == "memory/a.md#L9-L10"
    shown = [line for r in results for line in r.snippet.split("\n")]
    assert len(shown) == len(set(shown))


def test_the_longest_unshown_run_is_kept() -> None:
    ranked = [chunk(1, 6, 6), chunk(2, 4, 12)]
    results = place_results(ranked, 6, {}, 10_000)
    assert [(r.start_line, r.end_line) for r in results] == [(6, 6), (7, 12)]


def test_results_are_widened_with_neighbours_within_the_budget() -> None:
    ranked = [chunk(1, 10, 10), chunk(2, 11, 11), chunk(3, 12, 12)]
    results = place_results(ranked, 6, {}, 61 * 3 + 2, lambda path: FILE)
    first, second = results  # chunk 2's line is inside the first result: skipped
    # one line below, one above: three lines of 61 chars and two newlines fit the budget
    assert (first.start_line, first.end_line) == (9, 11)
    assert first.snippet == "\n".join(FILE[8:11]) and len(first.snippet) <= 61 * 3 + 2
    # line 11 is shown already, so the third chunk widens away from it
    assert (second.start_line, second.end_line) == (12, 14)


def test_no_widening_when_the_file_changed_or_cannot_be_read() -> None:
    ranked = [chunk(1, 10, 10)]
    changed = [*FILE]
    changed[9] = "edited since indexed"
    for lines in (changed, None, FILE[:5]):
        (result,) = place_results(ranked, 6, {}, 10_000, lambda path, lines=lines: lines)
        assert (result.start_line, result.end_line) == (10, 10)
        assert result.snippet == FILE[9]


def test_a_chunk_longer_than_the_budget_keeps_its_range_and_gets_a_window() -> None:
    ranked = [chunk(1, 1, 20)]
    (result,) = place_results(ranked, 6, {"l17": 5.0}, 200, lambda path: FILE)
    assert (result.start_line, result.end_line) == (1, 20)
    assert len(result.snippet) <= 200 and "[L17]" in result.snippet


def test_pieces_of_one_long_line_are_each_shown() -> None:
    pieces = [
        Candidate(ChunkRow(i, f"p{i}", "memory/b.md", "memory", 3, 3, text), score=1.0)
        for i, text in enumerate(["first half of a long line", "second half of it"], start=1)
    ]
    results = place_results(pieces, 6, {}, 10_000, lambda path: ["# t", "", "whole"])
    assert [r.snippet for r in results] == ["first half of a long line", "second half of it"]
    again = place_results([*pieces, pieces[0]], 6, {}, 10_000)
    assert len(again) == 2


def test_at_most_k_results() -> None:
    ranked = [chunk(i, i, i) for i in range(1, 11)]
    assert len(place_results(ranked, 3, {}, 10_000)) == 3


def _memory(workspace: Path, both: bool) -> Memory:
    for i in range(30):
        text = f"# topic {i}\nfiller text number {i} about work\n"
        write(workspace, f"memory/topic-{i}.md", text)
    write(workspace, "memory/target.md", "# ops\nthe zookeeper quorum needs five nodes\n")
    config = load_config(
        workspace,
        overrides={"search": {"score_both_legs": both, "candidate_multiplier": 1}},
    )
    return Memory(workspace, config=config, embedder=FakeEmbedder())


def test_both_legs_are_scored_for_every_candidate(workspace: Path) -> None:
    with _memory(workspace, both=True) as mem:
        response = mem.search("zookeeper quorum work", max_results=3, min_score=0.0)
    assert response.results
    for result in response.results:
        assert result.explain["vector"] > 0  # the cosine of keyword-only hits too
    target = next(r for r in response.results if r.path == "memory/target.md")
    assert target.explain["text"] > 0


def test_spec_mode_leaves_the_missing_leg_at_zero(workspace: Path) -> None:
    with _memory(workspace, both=False) as mem:
        response = mem.search("zookeeper quorum work", max_results=3, min_score=0.0)
    missing = [r for r in response.results if r.explain["vector"] == 0 or r.explain["text"] == 0]
    assert missing  # with one candidate per leg, some result lacks one side


def test_a_piece_of_a_long_line_shows_the_text_around_it() -> None:
    sentences = [f"第{i}句讲的是第{i}件事情。" for i in range(1, 41)]  # 10 chars each
    line = "".join(sentences)
    piece = "".join(sentences[20:25])
    cand = Candidate(ChunkRow(1, "p", "memory/zh.md", "memory", 2, 2, piece), score=1.0)
    (result,) = place_results([cand], 6, {}, 120, lambda path: ["# 标题", line])
    assert piece in result.snippet and len(result.snippet) <= 120
    assert result.snippet.startswith("第") and result.snippet in line  # starts on a sentence
    assert (result.start_line, result.end_line) == (2, 2)
    # the next piece of the same line does not repeat what was shown
    nxt = Candidate(ChunkRow(2, "q", "memory/zh.md", "memory", 2, 2, sentences[26]), score=0.9)
    inside = Candidate(ChunkRow(3, "r", "memory/zh.md", "memory", 2, 2, sentences[22]), score=0.9)
    first, second = place_results([cand, inside, nxt], 6, {}, 120, lambda path: ["# 标题", line])
    assert first.snippet == result.snippet
    assert sentences[26] in second.snippet and len(second.snippet) <= 120
    # it grows only to the right: the left is shown already (its own text may overlap)
    assert line.index(second.snippet) == line.index(sentences[26])


def _small_chunks(workspace: Path) -> Memory:
    lines = [f"- line {i}: filler words about nothing in particular" for i in range(12)]
    lines[6] = "- line 6: the zookeeper quorum needs five nodes"
    write(workspace, "memory/2026-11-20.md", "\n".join(lines) + "\n")  # a daily log: windows
    config = load_config(workspace, overrides={"chunking": {"tokens": 14, "overlap": 0}})
    return Memory(workspace, config=config, embedder=FakeEmbedder())


def test_search_results_are_widened_from_the_file(workspace: Path) -> None:
    with _small_chunks(workspace) as mem:
        hit = next(r for r in mem.search("zookeeper quorum").results if "zookeeper" in r.snippet)
    assert hit.end_line - hit.start_line >= 4  # neighbours added around the one-line chunk
    assert len(hit.snippet) <= 750


def test_a_hit_in_a_structured_note_is_the_matching_bullet_under_its_headings(
    workspace: Path,
) -> None:
    facts = [f"- service {i} runs on host app-{i}.internal" for i in range(30)]
    facts[17] = "- Production database: PostgreSQL 15 on db-prod-01.internal:5432"
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    text = text.replace("## Project facts\n", "## Project facts\n" + "\n".join(facts) + "\n")
    (workspace / "MEMORY.md").write_text(text, encoding="utf-8")
    line = text.splitlines().index(facts[17]) + 1
    with Memory(workspace, embedder=FakeEmbedder()) as mem:
        hit = mem.search("production database port").results[0]
    assert (hit.path, hit.start_line, hit.end_line) == ("MEMORY.md", line, line)
    assert hit.snippet == facts[17]
    assert hit.context == "Project facts"
    assert hit.to_dict()["context"] == "Project facts"


def test_files_too_large_to_read_per_search_are_not_widened(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_module, "WIDEN_MAX_BYTES", 100)
    with _small_chunks(workspace) as mem:
        hit = next(r for r in mem.search("zookeeper quorum").results if "zookeeper" in r.snippet)
    assert hit.start_line == hit.end_line == 7  # the chunk as found


def test_a_long_chunk_is_centred_on_its_focus_line() -> None:
    lines = [f"line {i} " + "x" * 90 for i in range(1, 21)]  # 20 lines of ~97 chars
    text = "\n".join(lines)
    cand = Candidate(ChunkRow(1, "p", "memory/c.md", "memory", 1, 20, text), score=1.0)
    cand.focus_line = 15
    [result] = place_results([cand], 6, {}, 300, None)
    assert result.start_line <= 15 <= result.end_line
    assert result.end_line - result.start_line == 2  # three ~97-char lines fit in 300
    assert result.snippet.startswith("line 14 ") and "line 16 " in result.snippet
    # without a focus the term-weighted window (here: the start) is shown
    plain = Candidate(ChunkRow(2, "q", "memory/d.md", "memory", 1, 20, text), score=1.0)
    [other] = place_results([plain], 6, {}, 300, None)
    assert other.snippet.startswith("line 1 ")


def test_focus_picks_the_unshown_run_that_holds_it() -> None:
    lines = [f"turn {i}" for i in range(1, 11)]
    first = Candidate(
        ChunkRow(1, "a", "memory/e.md", "memory", 4, 6, "\n".join(lines[3:6])), score=1.0
    )
    second = Candidate(
        ChunkRow(2, "b", "memory/e.md", "memory", 1, 9, "\n".join(lines[:9])), score=0.9
    )
    second.focus_line = 8
    out = place_results([first, second], 6, {}, 750, None)
    assert [(r.start_line, r.end_line) for r in out] == [(4, 6), (7, 9)]  # not the longer 1-3


def test_snippet_window_does_not_depend_on_the_hash_seed() -> None:
    # "postgres" alone weighs 0.6; "redis kafka nginx" weighs 0.1 + 0.2 + 0.3, which is
    # 0.6000000000000001 or 0.6 depending on the order of the addition: the window chosen must
    # not change with PYTHONHASHSEED (set iteration order).
    script = (
        "from memdir.search.placement import make_snippet\n"
        "text = 'postgres\\n' + 'x' * 30 + '\\nredis kafka nginx'\n"
        "w = {'postgr': 0.6, 'redi': 0.1, 'kafka': 0.2, 'nginx': 0.3}\n"
        "print(repr(make_snippet(text, w, 25)))\n"
    )
    seen = set()
    for seed in range(5):
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        seen.add(done.stdout)
    assert len(seen) == 1, seen


# -- packed structured chunks: a hit shows the blocks that hold the query's words ------------

PACKED = "## Kafka\n- owner: Tomás\n- on call: Priya\n\n- retention: 14 days"


def packed(seq: int = 1) -> Candidate:
    row = ChunkRow(seq, f"p{seq}", "MEMORY.md", "memory", 8, 11, PACKED)
    return Candidate(row, score=0.9)


def test_a_packed_chunk_narrows_to_the_block_holding_the_query_terms() -> None:
    [hit] = place_results([packed()], 6, {"priya": 2.0, "kafka": 0.5}, 750, tight=bool)
    assert (hit.start_line, hit.end_line, hit.snippet) == (9, 9, "- on call: Priya")
    assert hit.citation == "MEMORY.md#L9-L9"
    assert hit.context == "Kafka"  # the heading is matched by every block: no help


def test_blocks_matching_about_as_well_are_shown_with_what_lies_between() -> None:
    weights = {"tomás": 2.0, "retent": 1.5, "call": 0.2}  # stemmed, as indexed
    [hit] = place_results([packed()], 6, weights, 750, tight=bool)
    assert (hit.start_line, hit.end_line) == (8, 11)  # the lines it shows, honestly
    assert hit.snippet == "- owner: Tomás\n- on call: Priya\n\n- retention: 14 days"


def test_an_echo_cites_its_packed_source_as_shown() -> None:
    """``echo_of`` (set on chunks, before placement) names the source's result as it is shown,
    narrowed to its block, not the packed chunk's range."""
    echo_row = ChunkRow(2, "e2", "memory/2026-11-26-s.md", "memory", 3, 4, "- on call: Priya")
    echo = Candidate(echo_row, score=0.8)
    echo.echo_of = "MEMORY.md#L8-L11"
    source, quoted = place_results([packed(), echo], 6, {"priya": 2.0}, 750, tight=bool)
    assert source.citation == "MEMORY.md#L9-L9"
    assert quoted.explain["echo_of"] == source.citation


def test_a_packed_chunk_no_block_of_which_holds_a_query_word_is_shown_whole() -> None:
    for weights in ({}, {"kafka": 1.0}, {"latency": 3.0}):
        [hit] = place_results([packed()], 6, weights, 750, tight=bool)
        assert (hit.start_line, hit.end_line) == (8, 11), weights
    # and a chunk of a note that is not structured is never narrowed
    [hit] = place_results([packed()], 6, {"priya": 2.0}, 750)
    assert (hit.start_line, hit.end_line) == (8, 11)


def test_a_hit_in_a_packed_memory_chunk_is_only_its_bullet_with_its_heading(
    workspace: Path,
) -> None:
    facts = ["- owner of kafka: Tomás", "- on call this week: Priya", "- retention: 14 days"]
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    text = text.replace("## Project facts\n", "## Project facts\n" + "\n".join(facts) + "\n")
    (workspace / "MEMORY.md").write_text(text, encoding="utf-8")
    line = text.splitlines().index(facts[1]) + 1
    packed = load_config(workspace, overrides={"chunking": {"pack_tokens": 88}})
    with Memory(workspace, config=packed, embedder=FakeEmbedder()) as mem:
        mem.sync()
        [row] = [r for r in _chunks(mem) if "Priya" in r.text]
        assert (row.start_line, row.end_line) == (line - 1, line + 1)  # the three share a chunk
        hit = mem.search("who is on call this week").results[0]
    assert (hit.path, hit.start_line, hit.end_line) == ("MEMORY.md", line, line)
    assert hit.snippet == facts[1]
    assert hit.context == "Project facts"


def test_packing_is_automatic_for_calibrated_models_only(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[chunking] pack_tokens = -1``: a model whose scores are calibrated gets packed chunks;
    another (the fake one here, a remote provider) one block a chunk, since a packed chunk's
    raw cosine, diluted by its neighbours, would fall under ``search.raw_min_score``."""
    facts = ["- owner of kafka: Tomás", "- on call this week: Priya", "- retention: 14 days"]
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    text = text.replace("## Project facts\n", "## Project facts\n" + "\n".join(facts) + "\n")
    (workspace / "MEMORY.md").write_text(text, encoding="utf-8")
    line = text.splitlines().index(facts[1]) + 1
    fake = FakeEmbedder()
    with Memory(workspace, embedder=fake) as mem:
        mem.sync()
        assert mem.index.identity["pack_tokens"] == 0
        [row] = [r for r in _chunks(mem) if "Priya" in r.text]
        assert (row.start_line, row.end_line) == (line, line)
    shipped = next(iter(relevance.CALIBRATIONS.values()))
    monkeypatch.setitem(relevance.CALIBRATIONS, (fake.provider, fake.model_id), shipped)
    with Memory(workspace, embedder=fake) as mem:
        mem.sync()  # another identity: rebuilt
        assert mem.index.identity["pack_tokens"] == PACK_TOKENS
        [row] = [r for r in _chunks(mem) if "Priya" in r.text]
        assert (row.start_line, row.end_line) == (line - 1, line + 1)


def _chunks(mem: Memory) -> list[ChunkRow]:
    store = mem.index.store()
    seqs = [r[0] for r in store.conn.execute("SELECT seq FROM chunks")]  # type: ignore[attr-defined]
    return list(store.chunks_by_seq(seqs).values())  # type: ignore[attr-defined]
