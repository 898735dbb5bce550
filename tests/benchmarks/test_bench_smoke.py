"""Smoke tests of the retrieval benchmarks (benchmarks/locomo.py, benchmarks/cmrc.py).

They run each script's ``main(argv)`` in-process on a small slice of the real data sets with the
fake embedder (no model, no network; memsearch is not run). The data sets live outside the
repository, in ``shared/data`` next to it (``MEMDIR_BENCH_DATA`` overrides); the tests skip
when it is absent.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
DATA = Path(os.environ.get("MEMDIR_BENCH_DATA") or REPO.parent / "shared" / "data")
LOCOMO = DATA / "locomo" / "locomo10.json"
CMRC = DATA / "cmrc2018" / "cmrc2018_dev.json"
CONFIGS = ("default", "keyword", "openclaw")


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _bench_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    monkeypatch.setattr(sys, "argv", ["pytest"])


def table_rows(text: str, header_start: str) -> dict[str, dict[str, str]]:
    """Rows of the first Markdown table whose header starts with ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    headers = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(headers, cells, strict=True))
    return rows


def assert_fraction(value: object) -> None:
    number = float(value)  # type: ignore[arg-type]
    assert 0.0 <= number <= 1.0, value


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_locomo_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))[:2]
    for sample in data:  # keep the run short: 12 questions per conversation
        sample["qa"] = sample["qa"][:12]
    sliced = tmp_path / "locomo2.json"
    sliced.write_text(json.dumps(data), encoding="utf-8")
    out_json = tmp_path / "out.json"
    argv = ["--data", str(sliced), "--embedder", "fake", "--configs", ",".join(CONFIGS)]
    argv += ["--cache", str(tmp_path / "cache"), "--json", str(out_json)]

    assert load_script("locomo").main(argv) == 0
    text = capsys.readouterr().out
    assert "Split: dev" in text
    for layout in ("sessions", "daily"):
        section = text.split(f"### Layout `{layout}`", 1)[1]
        rows = table_rows(section, "| config |")
        assert set(rows) == set(CONFIGS)
        for row in rows.values():
            for header, cell in row.items():
                if "seen@" in header or header in ("located@6", "all-found@6"):
                    assert_fraction(cell)
            assert float(row["p50 ms"]) >= 0
    raw = json.loads(out_json.read_text(encoding="utf-8"))
    for layout, by_config in raw["results"].items():
        assert set(by_config) == set(CONFIGS), layout
        for metrics in by_config.values():
            assert metrics["questions"] > 0
            for key in ("seen@1", "seen@3", "seen@6", "located@6", "all_seen@6"):
                assert_fraction(metrics[key])
            assert metrics["seen@1"] <= metrics["seen@3"] <= metrics["seen@6"]


@pytest.mark.skipif(not CMRC.is_file(), reason=f"CMRC data not found at {CMRC}")
def test_cmrc_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--data", str(CMRC), "--limit", "20", "--question-stride", "2", "--embedder", "fake"]
    argv += ["--configs", ",".join(CONFIGS), "--cache", str(tmp_path / "cache")]

    assert load_script("cmrc").main(argv) == 0
    text = capsys.readouterr().out
    assert "20 paragraphs" in text and "(one in 2 of 74)" in text
    rows = table_rows(text, "| config |")
    assert set(rows) == set(CONFIGS)
    for row in rows.values():
        for key in ("R@1", "R@6", "MRR@6", "answer@6"):
            assert_fraction(row[key])
        assert float(row["R@1"]) <= float(row["R@6"])
    assert rows["keyword"]["R@6"] != "n/a"


@pytest.mark.skipif(not CMRC.is_file(), reason=f"CMRC data not found at {CMRC}")
def test_fresh_search_mode_searches_new_copies_without_indexing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    argv = ["--data", str(CMRC), "--limit", "12", "--question-stride", "3", "--embedder", "fake"]
    argv += ["--configs", "default", "--cache", str(cache), "--fresh-search"]
    argv += ["--json", str(tmp_path / "out.json")]

    assert load_script("cmrc").main(argv) == 0
    text = capsys.readouterr().out
    assert "searched straight after copying the files in" in text
    assert_fraction(table_rows(text, "| config |")["default"]["R@6"])
    build = json.loads((tmp_path / "out.json").read_text())["runs"]["default"]["builds"][0]
    assert build["fresh_search"] and 0 <= build["vectors"] <= build["chunks"]
    assert not cache.exists()  # nothing cached, nothing reused


@pytest.mark.skipif(not CMRC.is_file(), reason=f"CMRC data not found at {CMRC}")
def test_cmrc_paraphrase_questions_and_build_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = BENCH / "data" / "cmrc_paraphrase.jsonl"
    cmrc = load_script("cmrc")
    data = json.loads(CMRC.read_text(encoding="utf-8"))
    files, _ = cmrc.build_corpus(data, None)
    asked = cmrc.load_questions(questions, files)
    assert len(asked) == 44 and len({gold for _, gold, _ in asked}) == 44
    for question, gold, answers in asked:
        assert answers and answers[0] in files[gold], question  # each answer is in its paragraph
    base = ["--data", str(CMRC), "--embedder", "fake", "--cache", str(tmp_path / "cache")]
    assert cmrc.main([*base, "--limit", "5", "--configs", "keyword", "--build-only"]) == 0
    assert "| config |" not in capsys.readouterr().out  # nothing searched
    with pytest.raises(SystemExit, match="not indexed"):
        cmrc.main([*base, "--limit", "5", "--questions", str(questions)])


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_locomo_files_and_evidence() -> None:
    """Every turn tag sits on the line recorded for it; odd evidence ids are normalised."""
    locomo = load_script("locomo")
    sample = json.loads(LOCOMO.read_text(encoding="utf-8"))[0]
    sessions = locomo.load_sessions(sample["conversation"])
    for layout in locomo.LAYOUTS:
        files, where = locomo.build_layout(sessions, layout)
        assert all(re.fullmatch(r"memory/\d{4}-\d{2}-\d{2}(-session-\d+)?\.md", p) for p in files)
        for dia_id, (path, line) in where.items():
            assert files[path].split("\n")[line - 1].startswith(f"[{dia_id}] ")
        first = files[min(files)].split("\n", 1)[0]
        assert first == f"# {sessions[0].date_time}"
    known = {"D11:26", "D30:5", "D8:6", "D9:17"}
    counter: Counter[str] = Counter()
    raw = ["D:11:26", "D30:05", "D8:6; D9:17", "D", "D99:1"]
    got = locomo.normalise_evidence(raw, known, counter)
    assert got == ["D11:26", "D30:5", "D8:6", "D9:17"]
    assert counter["skipped_malformed"] == 1
    assert counter["skipped_absent"] == 1
    assert locomo.parse_day("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08"


def test_hooks_latency_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    """One run of each hook, the fake embedder, a tiny workspace: the report has every hook."""
    module = load_script("hooks_latency")
    assert module.main(["--runs", "1", "--embedder", "fake", "--notes", "2", "--turns", "2"]) == 0
    rows = table_rows(capsys.readouterr().out, "| hook")
    assert set(rows) == {"SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd"}
    assert "archived" in rows["SessionEnd"]["last run"]
    for row in rows.values():
        assert float(row["p50 s"]) > 0


def test_hooks_latency_service_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    """``--service``: cold, thin client and HTTP side by side (the script turns the fast path
    back on for its clients, uses its own MEMDIR_HOME and stops the service it started)."""
    module = load_script("hooks_latency")
    argv = ["--service", "--runs", "1", "--embedder", "fake", "--notes", "3", "--turns", "1"]
    assert module.main(argv) == 0
    out = capsys.readouterr().out
    rows = table_rows(out, "| hook | cold")
    assert set(rows) == {"SessionStart", "UserPromptSubmit zh", "UserPromptSubmit en"}
    ratios = table_rows(out, "| hook | cold / thin client")
    for row in ratios.values():
        assert row["same output: thin client"] == "yes"
        assert row["same output: HTTP keep-alive"] == "yes"
        assert float(row["cold / thin client"].rstrip("×")) > 0
    assert "Load average (1 / 5 / 15 min) before" in out


def test_coldstart_service_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    """``--service`` and a tiny ``--scale-files`` vault, fake embedder: every table filled."""
    module = load_script("coldstart")
    argv = ["--service", "--runs", "1", "--embedder", "fake", "--top-imports", "2"]
    assert module.main([*argv, "--scale-files", "12", "--scale-queries", "2"]) == 0
    out = capsys.readouterr().out
    rows = table_rows(out, "| query | cold p50")
    assert len(rows) == 3 and all(row["same output"] == "yes" for row in rows.values())
    assert re.search(r"thin client / floor = \d+\.\d\d\*\*", out)
    scale = table_rows(out, "| through the warm service")
    assert len(scale) == 2
    assert all(float(row["median ms"]) > 0 for row in scale.values())


def test_mcp_first_search_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One server start over stdio on a tiny indexed workspace (fake embedder): every step
    timed, both searches answered."""
    from memdir import Memory, init_workspace

    root, _ = init_workspace(tmp_path / "ws", "zh")
    (root / ".memdir" / "config.toml").write_text('[embedding]\nprovider = "fake"\n')
    (root / "memory" / "2026-12-01.md").write_text("- 数据库迁移计划: Redis 缓存端口改为 6380\n")
    with Memory(root) as memory:
        memory.sync()
    module = load_script("mcp_first_search")
    assert module.main(["--workspace", str(root), "--wait", "0", "--runs", "1"]) == 0
    rows = table_rows(capsys.readouterr().out, "| step")
    assert len(rows) == 3
    assert all(float(row["median ms"]) > 0 for row in rows.values())


def test_relevance_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two labelled workspaces with the fake embedder: fitted, held out, thresholds tabled."""
    module = load_script("relevance")
    records = tmp_path / "records.jsonl"
    argv = ["--embedder", "fake", "--suites", "devws,dev-zh-payments", "--records", str(records)]
    assert module.main([*argv, "--cache", str(tmp_path / "cache"), "--fit"]) == 0
    out = capsys.readouterr().out
    assert "ECE, all results" in out and "Reliability, dev" in out
    rows = table_rows(out, "| min_score")
    assert set(rows) >= {"0", "0.001", "0.01"}
    assert records.is_file() and len(records.read_text().splitlines()) > 100


def test_write_search_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    """Two facts written and searched through a real MCP server (fake embedder)."""
    module = load_script("write_search")
    assert module.main(["--facts", "2", "--embedder", "fake"]) == 0
    rows = table_rows(capsys.readouterr().out, "| server")
    [row] = rows.values()
    assert row["found"] == "2/2"


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_secrets_fp_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    """The secrets corpus, the normal notes line by line and whole: every secret removed, no
    normal line or text flagged (the figures docs/reliability.md quotes)."""
    from tests.privacy_corpus import SECRETS

    assert load_script("secrets_fp").main(["--data", str(DATA)]) == 0
    out = capsys.readouterr().out
    row = table_rows(out, "| detector")["memdir"]
    assert row["secrets found (removed whole)"] == f"{len(SECRETS)}/{len(SECRETS)} ({len(SECRETS)})"
    assert row["LoCoMo turns (en)"].startswith("0/")
    whole = table_rows(out, "| whole texts")["memdir"]
    assert whole["LoCoMo turns (en)"] == "0/272"
    assert "Secrets found by memdir in whole normal texts (0 texts)" in out


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo data not found at {LOCOMO}")
def test_injection_fp_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    """The 18 classes of injection all blocked, no line of LoCoMo, MemoryBank or CMRC flagged
    (the figures docs/reliability.md quotes)."""
    assert load_script("injection_fp").main(["--data", str(DATA), "--show", "3"]) == 0
    out = capsys.readouterr().out
    assert "Classes blocked: **18 of 18**" in out
    assert "False positives on LoCoMo, MemoryBank and CMRC: **0 of" in out
