"""``memdir ui`` as a real process: it listens on loopback only and serves the same data."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.ui.conftest import RunningUI

TCP_TABLE = Path("/proc/net/tcp")


def test_serves_search_on_loopback(ui_process: RunningUI) -> None:
    assert ui_process.url.startswith("http://127.0.0.1:")
    body = httpx.get(
        ui_process.url + "api/search", params={"q": "Redis 分布式锁"}, timeout=60
    ).json()
    assert body["results"][0]["path"] == "memory/2026-11-28.md"
    refused = httpx.get(ui_process.url + "api/index", headers={"Host": "evil.example"}, timeout=30)
    assert refused.status_code == 400


@pytest.mark.skipif(not TCP_TABLE.exists(), reason="needs Linux's /proc/net/tcp")
def test_the_socket_is_bound_to_127_0_0_1_only(ui_process: RunningUI) -> None:
    port = int(ui_process.url.rsplit(":", 1)[1].strip("/"))
    listening = []
    for line in TCP_TABLE.read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if int(hex_port, 16) == port and state == "0A":  # 0A: LISTEN
            listening.append(address)
    assert listening == ["0100007F"]  # 127.0.0.1, little-endian
