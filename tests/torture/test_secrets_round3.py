"""Every secret of issue 35's probe and of the general rules (:data:`tests.privacy_corpus.
ROUND3`: Hugging Face and DigitalOcean tokens, "the pw is …", "login/pass: admin / …", a
keyword near a value, a random-looking string) through every writer that stores text on its
own, as round 2's probes are (``pytest -m torture``): no piece of the secret anywhere in the
workspace, audit log included, and ``[REDACTED:<kind>]`` in the Markdown written. The fast
tests of the paths the probe used are ``tests/hooks/test_secrets_round3.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdir import init_workspace
from tests.privacy_corpus import ROUND3, kept_parts
from tests.torture.conftest import TALLY
from tests.torture.test_secrets_round2 import NOW, WRITERS, stored

pytestmark = pytest.mark.torture


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize(
    ("text", "secret", "kind"), ROUND3, ids=[f"{n:02d} {r[2]}" for n, r in enumerate(ROUND3)]
)
def test_no_piece_of_the_secret_is_stored(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    writer: str,
    text: str,
    secret: str,
    kind: str,
) -> None:
    monkeypatch.setenv("MEMDIR_NOW", NOW.isoformat())
    root, _ = init_workspace(tmp_path / "ws", "en")
    WRITERS[writer](root, text)
    everything, markdown = stored(root, writer)
    assert kept_parts(secret, everything) == [], f"{writer} kept part of a {kind}"
    assert f"[REDACTED:{kind}]" in markdown
    TALLY["secret probes written (round 3)"] += 1
