"""End to end in a real headless Chromium (Playwright driving Debian's ``chromium``): type a
Chinese query, see the hit and its score parts, open the file at the right line, preview a
dream run; a note holding ``<script>`` stays text; a phone-sized screen does not scroll
sideways. Screenshots of every page are saved (``tmp_path/screenshots``; also copied to
``$MEMDIR_UI_SCREENSHOTS`` when set).

Run with ``pytest -m browser``. It skips, saying why, without the ``playwright`` package or a
Chromium binary (``$MEMDIR_CHROMIUM``, default ``/usr/bin/chromium``; ``apt-get install
chromium``). ``playwright install`` is never needed: the system browser is used.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.conftest import RunningUI

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("MEMDIR_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1100, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the browser test needs Playwright: pip install playwright"
    )
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (or set MEMDIR_CHROMIUM)")
    with sync_api.sync_playwright() as playwright:
        # Playwright gives every launch a fresh temporary profile (user data dir).
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


class Shots:
    """Screenshots of the pages, kept under the test's tmp dir (and copied on request)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.taken: list[Path] = []

    def take(self, page: Any, name: str, *, full_page: bool = True) -> None:
        path = self.folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        assert path.stat().st_size > 5_000, f"{name}.png looks empty"
        self.taken.append(path)

    def publish(self) -> None:
        target = os.environ.get("MEMDIR_UI_SCREENSHOTS")
        if target:
            Path(target).mkdir(parents=True, exist_ok=True)
            for path in self.taken:
                shutil.copy(path, Path(target) / path.name)


@pytest.fixture
def shots(tmp_path: Path) -> Iterator[Shots]:
    taken = Shots(tmp_path / "screenshots")
    yield taken
    taken.publish()
    print(f"\nscreenshots: {taken.folder}")


def open_page(browser: Any, viewport: dict[str, int]) -> tuple[Any, list[str]]:
    """A new page that collects console errors, uncaught exceptions and dialogs."""
    page = browser.new_page(viewport=viewport, locale="zh-CN")
    page.set_default_timeout(60_000)  # a busy 2-core machine
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on(
        "request",
        lambda r: (
            None
            if r.url.startswith(("http://127.0.0.1", "data:"))
            else problems.append(f"remote request: {r.url}")
        ),
    )
    return page, problems


def sign_in(page: Any, ui: RunningUI) -> None:
    """Open the link ``memdir ui`` printed: the session cookie is set, the code leaves the
    address bar (the home page redirects to the search page)."""
    page.goto(ui.url)
    assert page.url == ui.base + "search", page.url
    (cookie,) = page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert "token=" not in page.url


def test_search_hit_file_line_and_dreaming(
    browser: Any, ui_process: RunningUI, shots: Shots
) -> None:
    base = ui_process.base
    page, problems = open_page(browser, DESKTOP)
    sign_in(page, ui_process)

    # Search: typed, not submitted — the results follow the query.
    page.goto(base + "search")
    page.locator("#q").press_sequentially("Redis 分布式锁", delay=30)
    first = page.locator("li.hit").first
    first.wait_for(timeout=30_000)
    page.wait_for_url(re.compile(r"/search\?q=Redis"))
    cite = first.locator("a.cite")
    assert cite.inner_text().startswith("memory/2026-11-28.md#L")
    marks = first.locator(".snippet mark").all_inner_texts()
    assert "Redis" in marks and any(m.startswith("分布式") for m in marks)
    labels = first.locator(".parts dt").all_inner_texts()
    assert labels[:4] == ["vector", "keyword", "decay", "age"]
    assert (
        first.locator(".score").inner_text() == f"{float(first.locator('.score').inner_text()):.3f}"
    )
    shots.take(page, "search", full_page=False)

    # Jump from the hit to its lines.
    cite.click()
    page.wait_for_url("**/files/memory/2026-11-28.md?lines=*#L*")
    line3 = page.locator("tr#L3")
    assert "marked" in (line3.get_attribute("class") or "")
    assert "分布式锁" in line3.inner_text()
    box = line3.bounding_box()
    assert box is not None and 0 <= box["y"] < DESKTOP["height"]
    shots.take(page, "file", full_page=False)

    # Dreaming: the entries, then a preview on the button.
    page.goto(base + "dreaming")
    assert page.locator("li.cand").count() == 2
    assert "passes" in page.locator("li.cand").first.inner_text()
    page.locator("li.cand summary").first.click()
    assert page.locator("li.cand").first.locator("table.factors tbody tr").count() == 9
    page.get_by_role("button", name="Preview a dream run").click()
    page.locator(".preview").wait_for()
    assert "would promote 1 entry" in page.locator(".preview .summary-line").inner_text()
    assert "preview=1" in page.url
    shots.take(page, "dreaming")

    for name in ("index", "files", "review", "history"):
        page.goto(base + name)
        page.locator("main h1").wait_for()
        shots.take(page, name)
    assert "dream: promoted 1 entry" in page.locator("main").inner_text()
    assert problems == []


def test_applying_a_dream_run_needs_the_confirmation(
    browser: Any, writable_ui_process: RunningUI, shots: Shots
) -> None:
    memory_md = writable_ui_process.workspace / "MEMORY.md"
    before = memory_md.read_text("utf-8")
    page, problems = open_page(browser, DESKTOP)
    sign_in(page, writable_ui_process)
    page.goto(writable_ui_process.base + "dreaming")
    page.get_by_role("button", name="Preview a dream run").click()
    page.get_by_role("button", name="Apply…").click()
    dialog = page.locator("dialog#apply-dialog")
    assert dialog.is_visible()
    shots.take(page, "dreaming-apply", full_page=False)
    page.get_by_role("button", name="Cancel").click()
    assert not dialog.is_visible()
    assert memory_md.read_text("utf-8") == before  # opening and cancelling writes nothing

    page.get_by_role("button", name="Apply…").click()
    page.get_by_role("button", name="Promote 1").click()
    # the result line (the history list below may show the same words once it refreshes)
    page.locator("#apply-result").get_by_text("promoted 1 entry (1 line)").wait_for()
    page.wait_for_url("**/dreaming")  # the page reloads on the new state
    assert "key=" in memory_md.read_text("utf-8").removeprefix(before)
    assert "2 promoted earlier" in page.locator("main").inner_text()
    assert problems == []


def test_the_index_page_follows_the_index(browser: Any, ui_process: RunningUI) -> None:
    """Another process changes the index; the open page shows it without a reload."""
    from memdir import Memory
    from tests.helpers import write

    page, problems = open_page(browser, DESKTOP)
    sign_in(page, ui_process)
    page.goto(ui_process.base + "index")
    files = page.locator(".card .big").first
    before = int(files.inner_text())
    write(
        ui_process.workspace,
        "memory/2026-11-29.md",
        "# 2026-11-29\n\n- 新的笔记：缓存改用 Redis 7。\n",
    )
    page.get_by_text("1 changed, 0 deleted since the last sync").wait_for(timeout=40_000)
    with Memory(ui_process.workspace) as memory:
        memory.sync()
    expect = pytest.importorskip("playwright.sync_api").expect
    expect(files).to_have_text(str(before + 1), timeout=40_000)
    assert page.get_by_text("every chunk is embedded").count() == 1
    assert problems == []


def test_a_script_in_a_note_stays_text(browser: Any, ui_process: RunningUI) -> None:
    page, problems = open_page(browser, DESKTOP)
    sign_in(page, ui_process)
    page.goto(ui_process.base + "files/memory/pitfalls.md")
    assert page.locator("td.tx", has_text="<script>alert('memdir-xss')</script>").count() == 1
    page.goto(ui_process.base + "search?q=alert%20script")
    assert page.locator(".snippet", has_text="<script>alert(").count() == 1
    assert problems == []  # no alert dialog, no error


def test_a_browser_without_the_link_sees_nothing(browser: Any, ui_process: RunningUI) -> None:
    """A second browser (a fresh profile, as another user's would be): every page refused, no
    note text; the link, once spent by the first browser, does not open it either."""
    first, _ = open_page(browser, DESKTOP)
    sign_in(first, ui_process)
    second = browser.new_context(locale="zh-CN").new_page()
    for path in ("", "search?q=Redis", "files/MEMORY.md", "dreaming", "api/index"):
        answer = second.goto(ui_process.base + path)
        assert answer is not None and answer.status == 401, path
        assert "Redis" not in second.content() and "分布式锁" not in second.content()
    spent = second.goto(ui_process.url)
    assert spent is not None and spent.status == 401 and "used already" in second.content()


def test_phone_screen(browser: Any, ui_process: RunningUI, shots: Shots) -> None:
    page, problems = open_page(browser, PHONE)
    sign_in(page, ui_process)
    for path, name in (
        ("search?q=Redis%20分布式锁", "search-phone"),
        ("dreaming", "dreaming-phone"),
        ("review?since=all", "review-phone"),
    ):
        page.goto(ui_process.base + path)
        page.locator("main h1, li.hit").first.wait_for()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{path} scrolls sideways ({width}px)"
        shots.take(page, name, full_page=False)
    assert problems == []
