"""Line-based, CJK-aware chunking of Markdown (docs/design.md#chunking)."""

from __future__ import annotations

import hashlib
import itertools
import math
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.markdown import Chunk, chunk_markdown
from memdir.text import estimate_tokens


def tokens_of(chunk: Chunk) -> int:
    """Estimated tokens of a chunk, line by line (the newline joins are not counted)."""
    return sum(estimate_tokens(segment) for segment in chunk.text.split("\n"))


def ranges(chunks: list[Chunk]) -> list[tuple[int, int]]:
    return [(c.start_line, c.end_line) for c in chunks]


def numbered_lines(count: int, width: int = 40) -> list[str]:
    """``count`` distinct ASCII lines of ``width`` chars (``width / 4`` tokens each)."""
    return [f"line {n:03d} ".ljust(width, "x") for n in range(1, count + 1)]


# --- line ranges and text ------------------------------------------------------------------


def test_empty_text_gives_no_chunks():
    assert chunk_markdown("") == []


def test_blank_text_gives_no_chunks():
    assert chunk_markdown("\n\n   \n\t\n") == []


def test_short_text_is_one_chunk_with_one_based_inclusive_range():
    text = "# Title\n\nfirst line\nsecond line"

    chunks = chunk_markdown(text)

    assert ranges(chunks) == [(1, 4)]
    assert chunks[0].text == text


def test_chunk_text_is_the_lines_of_its_range():
    lines = numbered_lines(30)
    text = "\n".join(lines)

    chunks = chunk_markdown(text, max_tokens=50, overlap_tokens=20)

    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_chunks_respect_max_and_min_tokens():
    lines = numbered_lines(50, width=36)  # 9 tokens a line
    chunks = chunk_markdown("\n".join(lines), max_tokens=40, overlap_tokens=0)

    assert all(tokens_of(c) <= 40 for c in chunks)
    # A chunk ends only once it holds a quarter of max_tokens (the last one excepted).
    assert all(tokens_of(c) >= 10 for c in chunks[:-1])


def test_overlap_repeats_trailing_whole_lines_that_fit():
    lines = numbered_lines(40)  # 10 tokens a line
    chunks = chunk_markdown("\n".join(lines), max_tokens=50, overlap_tokens=20)

    assert len(chunks) > 3
    for before, after in itertools.pairwise(chunks):
        shared = lines[after.start_line - 1 : before.end_line]
        assert shared
        assert sum(estimate_tokens(line) for line in shared) <= 20
        # The shared lines end the first chunk and start the next one, whole.
        assert before.text.endswith("\n".join(shared))
        assert after.text.startswith("\n".join(shared))


def test_without_overlap_chunks_tile_the_file():
    chunks = chunk_markdown("\n".join(numbered_lines(40)), max_tokens=50, overlap_tokens=0)

    assert chunks[0].start_line == 1 and chunks[-1].end_line == 40
    for before, after in itertools.pairwise(chunks):
        assert after.start_line == before.end_line + 1


def test_overlap_is_clamped_below_max_tokens():
    lines = numbered_lines(12)
    chunks = chunk_markdown("\n".join(lines), max_tokens=30, overlap_tokens=500)

    # Every chunk still makes progress and respects the limit; none holds another.
    assert all(tokens_of(c) <= 30 for c in chunks)
    assert [c.start_line for c in chunks] == sorted({c.start_line for c in chunks})
    assert [c.end_line for c in chunks] == sorted({c.end_line for c in chunks})
    assert chunks[-1].end_line == 12


# --- content-defined boundaries ------------------------------------------------------------


def bullet_log(count: int, seed: int = 0) -> list[str]:
    """A daily log of ``count`` bullets of varied length (no headings, no blank lines)."""
    words = [
        "redis",
        "port",
        "cache",
        "deploy",
        "缓存",
        "迁移",
        "backup",
        "lunch",
        "review",
        "kafka",
        "端口",
        "会议",
    ]
    return [
        "- " + " ".join(words[(i * 7 + j + seed) % len(words)] for j in range(3 + (i * 5) % 11))
        for i in range(count)
    ]


def test_an_edit_changes_only_the_chunks_around_it():
    lines = bullet_log(400)
    before = chunk_markdown("\n".join(lines))
    changed = []
    for at in range(5, 395, 13):
        edited = list(lines)
        edited[at] += " and a longer tail of words added by the edit"
        after = chunk_markdown("\n".join(edited))
        changed.append(len({c.hash for c in after} - {c.hash for c in before}))
        # Far from the edit the chunks are cut exactly as before.
        assert [(c.start_line, c.text) for c in after if c.start_line > at + 60] == [
            (c.start_line, c.text) for c in before if c.start_line > at + 60
        ]
    assert max(changed) <= 4
    assert sum(changed) / len(changed) <= 2


def test_with_overlap_an_edit_still_changes_only_a_few_chunks():
    # The defaults (200 tokens, 120 of overlap): greedy chunks shifted every later boundary of
    # the file (a median 27 of 72 chunks changed here); content-defined tiles do not.
    lines = bullet_log(400)
    before = chunk_markdown("\n".join(lines), max_tokens=200, overlap_tokens=120)
    changed = []
    for at in range(5, 395, 13):
        edited = list(lines)
        edited[at] += " and a longer tail of words added by the edit"
        after = chunk_markdown("\n".join(edited), max_tokens=200, overlap_tokens=120)
        changed.append(len({c.hash for c in after} - {c.hash for c in before}))
    assert max(changed) <= 6
    assert sorted(changed)[len(changed) // 2] <= 4


def test_a_line_inserted_at_the_top_does_not_shift_every_boundary():
    lines = bullet_log(300)
    before = chunk_markdown("\n".join(lines))
    after = chunk_markdown("\n".join(["- a new first bullet about redis", *lines]))
    assert len({c.text for c in after} - {c.text for c in before}) <= 3


def test_chunks_end_before_headings_and_paragraphs():
    section = "\n".join(numbered_lines(8))  # 80 tokens
    text = f"# One\n{section}\n\n## Two\n{section}\n\nplain paragraph\n{section}"
    chunks = chunk_markdown(text, max_tokens=200)
    starts = [c.text.split("\n")[0] for c in chunks]
    assert starts == ["# One", "## Two", "plain paragraph"]


def test_columns_locate_pieces_of_a_long_line():
    line = distinct_ascii(3000)
    text = f"intro\n{line}\noutro"
    lines = text.split("\n")
    for chunk in chunk_markdown(text, max_tokens=200):
        part = lines[chunk.start_line - 1 : chunk.end_line]
        if chunk.end_col is not None:
            part[-1] = part[-1][: chunk.end_col]
        part[0] = part[0][chunk.start_col :]
        assert "\n".join(part) == chunk.text


def test_whitespace_only_chunks_are_dropped():
    text = "\n".join(["x" * 20, " " * 20, "y" * 20])  # 5 tokens each

    chunks = chunk_markdown(text, max_tokens=5, overlap_tokens=0)

    assert ranges(chunks) == [(1, 1), (3, 3)]
    assert [c.text for c in chunks] == ["x" * 20, "y" * 20]


def test_crlf_line_endings_leave_no_carriage_return():
    text = "first\r\nsecond\r\n\r\n" + "z" * 2000 + "\r\nthird\r\n"

    chunks = chunk_markdown(text, max_tokens=100, overlap_tokens=10)

    assert chunks
    assert all("\r" not in c.text for c in chunks)
    assert chunks[0].text.startswith("first\nsecond\n")


def test_chunk_hash_is_sha256_of_text():
    chunk = chunk_markdown("缓存迁移 to port 6380\n")[0]

    assert chunk.hash == hashlib.sha256(chunk.text.encode("utf-8")).hexdigest()
    assert Chunk(1, 1, "a").hash != Chunk(1, 1, "b").hash


# --- lines longer than a chunk -------------------------------------------------------------


def distinct_ascii(length: int) -> str:
    """An ASCII string in which a misplaced or lost piece would show."""
    return "".join(f"{n:07d}|" for n in range(length // 8 + 1))[:length]


def test_long_line_is_split_into_pieces_that_keep_its_line_number():
    line = distinct_ascii(4000)  # 1000 tokens

    chunks = chunk_markdown(line, max_tokens=400, overlap_tokens=80)

    assert len(chunks) == 3
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert "".join(c.text for c in chunks) == line
    assert all(tokens_of(c) <= 400 for c in chunks)


def test_long_line_between_short_lines():
    long_line = distinct_ascii(4000)
    text = f"intro\n{long_line}\noutro"

    chunks = chunk_markdown(text, max_tokens=400, overlap_tokens=80)

    assert chunks[0].text == "intro"
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 1)
    middle = [c for c in chunks if c.start_line <= 2 <= c.end_line]
    # Every piece of line 2 sits in a chunk whose range includes line 2.
    pieces = [c.text.split("\n")[0] if c.start_line == 2 else c.text.split("\n")[1] for c in middle]
    assert "".join(pieces) == long_line
    assert chunks[-1].text.endswith("outro")
    assert chunks[-1].end_line == 3


def test_cjk_line_is_split_by_cjk_token_count():
    line = "".join(chr(0x4E00 + n) for n in range(1000))  # 1000 distinct CJK chars

    chunks = chunk_markdown(line, max_tokens=400)

    assert len(chunks) == 3
    assert [len(c.text) for c in chunks] == [400, 400, 200]
    assert "".join(c.text for c in chunks) == line


def test_mixed_cjk_and_ascii_line_pieces_fit():
    line = ("缓存ab" * 500) + ("端口cdef" * 300)

    chunks = chunk_markdown(line, max_tokens=97, overlap_tokens=13)

    assert "".join(c.text for c in chunks) == line
    assert all(tokens_of(c) <= 97 for c in chunks)


def test_ten_megabyte_single_line():
    line = (string.ascii_letters * (10_000_000 // len(string.ascii_letters) + 1))[:10_000_000]

    chunks = chunk_markdown(line, max_tokens=400, overlap_tokens=80)

    assert len(chunks) == math.ceil(10_000_000 / 1600)
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert sum(len(c.text) for c in chunks) == len(line)
    assert "".join(c.text for c in chunks) == line


def test_max_tokens_below_one_is_treated_as_one():
    chunks = chunk_markdown("abcdefgh", max_tokens=0, overlap_tokens=0)

    assert [c.text for c in chunks] == ["abcd", "efgh"]


def test_trailing_newline_does_not_add_a_line():
    chunks = chunk_markdown("first\nsecond\n")

    assert ranges(chunks) == [(1, 2)]
    assert chunks[0].text == "first\nsecond"


# --- properties ----------------------------------------------------------------------------

CJK = "缓存迁移端口分布式锁数据库配置的了吗"
line_text = st.one_of(
    st.just(""),
    st.text(alphabet=" \t", max_size=5),
    st.text(alphabet=string.ascii_letters + string.digits + " #-*.", max_size=150),
    st.text(alphabet=CJK + " \uff0c\u3002", max_size=120),  # fullwidth comma, full stop
    st.text(alphabet=string.ascii_letters + CJK + " ", max_size=300),
)


@st.composite
def markdown_and_limits(draw):
    lines = draw(st.lists(line_text, max_size=40))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    max_tokens = draw(st.integers(min_value=5, max_value=200))
    overlap = draw(st.integers(min_value=0, max_value=max_tokens - 1))
    return lines, newline.join(lines), max_tokens, overlap


@settings(max_examples=300, deadline=None)
@given(markdown_and_limits())
def test_chunking_properties(case):
    lines, text, max_tokens, overlap = case

    chunks = chunk_markdown(text, max_tokens=max_tokens, overlap_tokens=overlap)

    line_count = len(text.splitlines())
    split = [line.removesuffix("\r") for line in text.split("\n")]
    for chunk in chunks:
        part = split[chunk.start_line - 1 : chunk.end_line]
        if chunk.end_col is not None:
            part[-1] = part[-1][: chunk.end_col]
        part[0] = part[0][chunk.start_col :]
        assert "\n".join(part) == chunk.text
        assert 1 <= chunk.start_line <= chunk.end_line <= line_count
        assert chunk.text.strip()
        assert "\r" not in chunk.text
        assert tokens_of(chunk) <= max_tokens
        covered = lines[chunk.start_line - 1 : chunk.end_line]
        if all(estimate_tokens(line) <= max_tokens for line in covered):
            assert chunk.text == "\n".join(covered)

    starts = [c.start_line for c in chunks]
    ends = [c.end_line for c in chunks]
    assert starts == sorted(starts)
    assert ends == sorted(ends)

    for number, line in enumerate(lines, start=1):
        if line.strip():
            assert any(c.start_line <= number <= c.end_line for c in chunks), number


@settings(max_examples=100, deadline=None)
@given(
    st.text(alphabet=string.ascii_letters + CJK, min_size=1, max_size=2000),
    st.integers(min_value=1, max_value=120),
    st.integers(min_value=0, max_value=119),
)
def test_single_long_line_pieces_reproduce_the_line(line, max_tokens, overlap):
    # Only the last piece can be smaller than a chunk, so no piece is repeated as overlap.
    chunks = chunk_markdown(line, max_tokens=max_tokens, overlap_tokens=overlap)

    assert "".join(c.text for c in chunks) == line
    assert all(estimate_tokens(c.text) <= max_tokens for c in chunks)
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)


def test_long_line_is_cut_at_sentence_ends():
    sentence = "这是一个关于分布式锁的句子，说明了锁的用途。"  # 22 CJK tokens
    line = sentence * 10
    chunks = chunk_markdown(line, max_tokens=50, overlap_tokens=0)
    assert "".join(c.text for c in chunks) == line
    assert all(c.text.endswith("。") for c in chunks)
    assert all(estimate_tokens(c.text) <= 50 for c in chunks)


def test_long_english_line_is_cut_after_a_sentence_or_a_space():
    line = "The redis cluster listens on port 6380. " * 12 + "x" * 30
    chunks = chunk_markdown(line, max_tokens=30, overlap_tokens=0)
    assert "".join(c.text for c in chunks) == line
    assert all(c.text.endswith(". ") or c.text.endswith(" ") for c in chunks[:-1])
    nospace = "y" * 400
    pieces = chunk_markdown(nospace, max_tokens=30, overlap_tokens=0)
    assert [len(c.text) for c in pieces] == [120, 120, 120, 40]
