"""Secret detection on notes: recall on the secrets corpus, false positives on normal notes.

Protocol. Every text of ``tests/privacy_corpus.py`` SECRETS must come out of the detector with
its secret gone, no piece of it left (recall: ``kept_parts``); every line of a normal-notes
corpus should come out untouched (a flagged line is a false positive). The normal corpus is
built from the data sets the retrieval benchmarks use — LoCoMo dialogue turns (English),
MemoryBank user/assistant exchanges (Chinese and English), CMRC 2018 paragraphs (Chinese
Wikipedia) — plus every non-code line of this repository's docs and sample notes (hashes, URLs,
ports, config snippets: the hard cases). memdir's writers check whole texts (a session archive,
a flush reply, a note being promoted), so its detector is also run on whole ones: each LoCoMo
session, each MemoryBank day, each doc file; a whole text with a finding is a false positive.

memdir's detector (:class:`memdir.safety.privacy.SecretGuard`) is measured, and detect-secrets
(Yelp) with its default plugins when it is installed (``pip install detect-secrets``; not a memdir
dependency), for comparison. The flagged normal lines are printed so a person can check each.

    PYTHONPATH=src:. python benchmarks/secrets_fp.py --data /path/to/shared/data
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.privacy_corpus import NORMAL, SECRETS, kept_parts

from memdir.safety.privacy import SecretGuard

ROOT = Path(__file__).resolve().parents[1]


def normal_corpus(data: Path) -> dict[str, list[str]]:
    """Name → lines of ordinary notes."""
    corpora: dict[str, list[str]] = {"privacy_corpus NORMAL": list(NORMAL)}
    for name, texts in normal_documents(data).items():
        corpora[name] = [line for text in texts for line in text.split("\n")]
    return corpora


def normal_documents(data: Path) -> dict[str, list[str]]:
    """Name → whole ordinary texts (one a LoCoMo session, MemoryBank day, CMRC paragraph or
    doc file), their lines joined by newlines: what memdir's writers check at once."""
    corpora: dict[str, list[str]] = {}
    locomo = data / "locomo" / "locomo10.json"
    if locomo.exists():
        sessions = []
        for sample in json.loads(locomo.read_text(encoding="utf-8")):
            conv = sample["conversation"]
            for key, value in conv.items():
                if key.startswith("session_") and isinstance(value, list):
                    turns = [_one_line(t["text"]) for t in value if t.get("text")]
                    if turns:
                        sessions.append("\n".join(turns))
        corpora["LoCoMo turns (en)"] = sessions
    for lang in ("cn", "en"):
        bank = data / "memorybank" / f"memory_bank_{lang}.json"
        if bank.exists():
            days = []
            for user in json.loads(bank.read_text(encoding="utf-8")).values():
                for exchanges in user.get("history", {}).values():
                    lines = [
                        _one_line(v)
                        for ex in exchanges
                        for v in (ex.get("query"), ex.get("response"))
                        if v
                    ]
                    if lines:
                        days.append("\n".join(lines))
            corpora[f"MemoryBank ({lang})"] = days
    cmrc = data / "cmrc2018" / "cmrc2018_dev.json"
    if cmrc.exists():
        paragraphs = [
            _one_line(p["context"])
            for article in json.loads(cmrc.read_text(encoding="utf-8"))["data"]
            for p in article["paragraphs"]
        ]
        corpora["CMRC 2018 paragraphs (zh)"] = paragraphs
    corpora["repository docs and samples"] = list(_doc_texts())
    return corpora


def _one_line(text: str) -> str:
    """A turn or paragraph as one line (a line of the line-by-line count stays one item)."""
    return " ".join(text.splitlines())


def _doc_texts() -> Iterator[str]:
    files = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    files += sorted((ROOT / "src" / "memdir" / "samples").rglob("*.md"))
    for path in files:
        fenced = False
        lines = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if line.strip() and not fenced:
                lines.append(line)
        yield "\n".join(lines)


def memdir_detector() -> Callable[[list[str]], set[int]]:
    guard = SecretGuard()
    return lambda texts: {n for n, text in enumerate(texts) if guard.find(text)}


def memdir_removed() -> int:
    """How many SECRETS texts memdir's redaction leaves with no piece of the secret."""
    guard = SecretGuard()
    return sum(1 for text, secret, _ in SECRETS if not kept_parts(secret, guard.redact(text)[0]))


def detect_secrets_detector() -> Callable[[list[str]], set[int]] | None:
    """detect-secrets as its users run it: ``scan_file`` over a file (here one text a line,
    newlines flattened) with the default plugins and filters."""
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError:
        return None

    def detect(texts: list[str]) -> set[int]:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "notes.md"
            lines = [" ".join(t.splitlines()) for t in texts]
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            found = SecretsCollection()
            with default_settings():
                found.scan_file(str(path))
            return {s.line_number - 1 for _, s in found}

    return detect


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the shared data folder")
    parser.add_argument("--show", type=int, default=15, help="flagged normal lines to print")
    args = parser.parse_args(argv)
    corpora = normal_corpus(args.data)
    documents = normal_documents(args.data)
    detectors = {"memdir": memdir_detector()}
    ds = detect_secrets_detector()
    if ds is not None:
        detectors["detect-secrets (default plugins)"] = ds
    print("# Secret detection: recall and false positives\n")
    print(f"- command: `{' '.join(sys.argv)}`")
    print(f"- machine: {platform.platform()}, Python {platform.python_version()}\n")
    head = " | ".join(["detector", "secrets found (removed whole)", *corpora, "ms / 1k lines"])
    print(f"| {head} |")
    print("|---|---|" + "---|" * len(corpora) + "---|")
    flagged_by: dict[str, list[tuple[str, str]]] = {}
    for name, detect in detectors.items():
        hits = len(detect([text for text, _secret, _kind in SECRETS]))
        removed = f" ({memdir_removed()})" if name == "memdir" else ""
        cells = [f"{hits}/{len(SECRETS)}{removed}"]
        flagged: list[tuple[str, str]] = []
        lines_total = 0
        started = time.perf_counter()
        for corpus, lines in corpora.items():
            bad = [(corpus, lines[n]) for n in sorted(detect(lines))]
            flagged.extend(bad)
            lines_total += len(lines)
            cells.append(f"{len(bad)}/{len(lines)} ({100 * len(bad) / max(1, len(lines)):.2f} %)")
        ms = 1000 * (time.perf_counter() - started) / max(1, lines_total) * 1000
        print(f"| {name} | " + " | ".join(cells) + f" | {ms:.1f} |")
        flagged_by[name] = flagged
    print("\nWhole texts (flagged / texts), as memdir's writers check them:\n")
    print("| whole texts | " + " | ".join(documents) + " |")
    print("|---|" + "---|" * len(documents))
    whole = memdir_detector()
    flagged_texts: list[tuple[str, str]] = []
    cells = []
    for corpus, texts in documents.items():
        bad = [(corpus, texts[n]) for n in sorted(whole(texts))]
        flagged_texts.extend(bad)
        cells.append(f"{len(bad)}/{len(texts)}")
    print("| memdir | " + " | ".join(cells) + " |")
    for name, flagged in flagged_by.items():
        print(f"\n## Normal lines flagged by {name} ({len(flagged)})\n")
        for corpus, line in flagged[: args.show]:
            print(f"- [{corpus}] `{line[:120]}`")
    guard = SecretGuard()
    print(f"\n## Secrets found by memdir in whole normal texts ({len(flagged_texts)} texts)\n")
    for corpus, text in flagged_texts[: args.show]:
        for finding in guard.find(text):
            around = text[max(0, finding.start - 60) : finding.end + 20]
            print(f"- [{corpus}] {finding.kind}: `{' '.join(around.split())[:140]}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
