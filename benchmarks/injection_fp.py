"""The injection check on injections and on ordinary notes: classes blocked, false positives.

Protocol. Every text of the 18 classes of ``tests/injection_corpus.py`` (13 by language or kind
of phrasing, in 9 languages; 5 by disguise) should be recognised by
:func:`memdir.safety.injection.looks_like_injection`; a class counts as blocked when all of its
texts are. Every line of the ordinary notes should pass: LoCoMo dialogue turns (English), MemoryBank
user and assistant turns (Chinese and English) and CMRC 2018 paragraphs (Chinese Wikipedia),
one line each, as ``benchmarks/secrets_fp.py`` reads them; a flagged line is a false positive
(the target: at most 0.1 % of them). This repository's docs are counted apart: they talk about
system prompts and memdir's tools on purpose, and a note that does is refused on purpose.

    PYTHONPATH=src:. python benchmarks/injection_fp.py --data /path/to/shared/data
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

from tests.injection_corpus import HELD_OUT, NORMAL, VARIANTS

from memdir.safety.injection import injection_match
from secrets_fp import normal_documents

#: The corpora the 0.1 % target is about (the docs are printed apart).
TARGET = ("LoCoMo turns (en)", "MemoryBank (cn)", "MemoryBank (en)", "CMRC 2018 paragraphs (zh)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the shared data folder")
    parser.add_argument("--show", type=int, default=20, help="flagged normal lines to print")
    args = parser.parse_args(argv)
    print("# Prompt-injection check: classes blocked and false positives\n")
    print(f"- command: `{' '.join(sys.argv)}`")
    print(f"- machine: {platform.platform()}, Python {platform.python_version()}\n")
    print("| class | language | disguise | blocked |")
    print("|---|---|---|---|")
    blocked = 0
    for variant in VARIANTS:
        hits = sum(injection_match(text) is not None for text in variant.texts)
        blocked += hits == len(variant.texts)
        print(
            f"| {variant.name} | {variant.language} | {variant.disguise} | "
            f"{hits}/{len(variant.texts)} |"
        )
    print(f"\nClasses blocked: **{blocked} of {len(VARIANTS)}**.\n")
    missed = [text for text in HELD_OUT if injection_match(text) is None]
    print(
        f"Held-out texts (one per class, written after the patterns were tuned): "
        f"{len(HELD_OUT) - len(missed)} of {len(HELD_OUT)} recognised"
        + "".join(f"\n- missed: `{text}`" for text in missed)
        + "\n"
    )
    corpora = {"injection_corpus NORMAL": list(NORMAL)}
    for name, texts in normal_documents(args.data).items():
        corpora[name] = [line for text in texts for line in text.split("\n") if line.strip()]
    print("| ordinary notes | lines | flagged | rate | ms / 1k lines |")
    print("|---|---|---|---|---|")
    flagged: list[tuple[str, str, str]] = []
    in_target = lines_in_target = 0
    for name, lines in corpora.items():
        started = time.perf_counter()
        found = [(line, injection_match(line)) for line in lines]
        ms = 1000 * (time.perf_counter() - started) / max(1, len(lines)) * 1000
        bad = [(name, line, match) for line, match in found if match is not None]
        flagged.extend(bad)
        if name in TARGET:
            in_target += len(bad)
            lines_in_target += len(lines)
        rate = 100 * len(bad) / max(1, len(lines))
        print(f"| {name} | {len(lines):,} | {len(bad)} | {rate:.2f} % | {ms:.0f} |")
    rate = 100 * in_target / max(1, lines_in_target)
    print(
        f"\nFalse positives on LoCoMo, MemoryBank and CMRC: **{in_target} of "
        f"{lines_in_target:,} lines ({rate:.3f} %)**; the target is at most 0.1 %.\n"
    )
    print(f"## Flagged lines ({len(flagged)}; the first {args.show})\n")
    for name, line, match in flagged[: args.show]:
        print(f"- [{name}] `{match}` in `{' '.join(line.split())[:140]}`")
    return 0


if __name__ == "__main__":
    sys.exit(main())
