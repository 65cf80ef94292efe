"""The Space in a real browser: headless Debian chromium driven by Playwright, at laptop width."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests._space_support import free_port, load_space, make_build, make_results

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LEAD_SHOT = Path("/tmp/space.png")
"""A copy of the screenshot for a person to look at (outside tmp_path on purpose, opt-out with
FORESIGHT_NO_SHOT=1)."""

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="no /usr/bin/chromium: apt-get install -y chromium"
    ),
]


def rows(page: object) -> list[str]:
    return page.locator("#leaderboard-table .virtual-row").all_inner_texts()  # type: ignore[attr-defined]


def wait_rows(page: object, pred: object, timeout_s: float = 20.0) -> list[str]:
    """Poll the visible table rows until ``pred(rows)`` holds (bounded)."""
    deadline = time.monotonic() + timeout_s
    got: list[str] = []
    while time.monotonic() < deadline:
        got = rows(page)
        if pred(got):  # type: ignore[operator]
            return got
        time.sleep(0.2)
    raise AssertionError(f"table rows never matched: {got}")


def test_page_loads_leader_search_and_screenshot(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    app, data = load_space()
    results, build = make_results(tmp_path), make_build(tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        for var in (data.RESULTS_ENV, data.DATASET_ENV, "SPACE_ID"):
            mp.delenv(var, raising=False)
        demo, _ = app.create(results, build)
    port = free_port()
    demo.launch(
        server_name="127.0.0.1",
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,
        css=app.CSS,
        theme=app.THEME,
        allowed_paths=[str(results)],
    )
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, timeout=60_000)
            try:
                page = browser.new_page(viewport={"width": 1366, "height": 768})
                page.set_default_timeout(30_000)
                page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
                page.wait_for_selector("#leaderboard-table .virtual-row")
                # three judges and the shortcut reference line
                first = wait_rows(page, lambda r: len(r) == 4)
                assert "Shortcut reference" in first[-1]
                # the expected leader, shown as text (its name holds markup that must not render)
                assert "Alpha <b>judge</b>" in first[0] and first[0].lstrip().startswith("1")
                # nothing cut off at laptop width: no horizontal scrolling, table included
                assert page.evaluate("document.documentElement.scrollWidth") <= 1366
                over = page.evaluate(
                    "() => [...document.querySelectorAll('#leaderboard-table .virtual-table-viewport,"
                    " #leaderboard-table table')].map(e => e.scrollWidth - e.clientWidth)"
                )
                assert over and max(over) <= 2, over
                shot = tmp_path / "space.png"
                page.screenshot(path=str(shot))
                assert shot.stat().st_size > 10_000
                if not os.environ.get("FORESIGHT_NO_SHOT"):
                    shutil.copy(shot, LEAD_SHOT)
                # the search box filters rows
                page.locator("#search textarea, #search input").first.fill("gam")
                filtered = wait_rows(page, lambda r: len(r) == 2)
                assert "Gamma" in filtered[0] and "Shortcut reference" in filtered[1]
                page.screenshot(path=str(tmp_path / "space-search.png"))
                page.locator("#search textarea, #search input").first.fill("")
                wait_rows(page, lambda r: len(r) == 4)
            finally:
                browser.close()
    finally:
        demo.close()
