"""Real Chromium (Debian's package) driven by Playwright. Playwright's own browser download does not work
offline, so the browser is the system one; `make test` installs it (scripts/ensure-chromium.sh). A missing
browser fails the run: these tests never skip."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

T = TypeVar("T")
ARTIFACTS = Path(__file__).resolve().parents[2] / ".cache" / "screenshots"
# flags: no sandbox as root; no background networking, or Chromium keeps dialling Google's hosts on a
# closed network; no GPU in a headless container
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    path = os.environ.get("CAREERWISE_TEST_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        raise RuntimeError(
            "Chromium is missing: `make test` installs it as root; otherwise `sudo apt-get install chromium`"
        )
    return path


# per module, not per session: while Playwright's sync API is running, the main thread has a running
# event loop and every later asyncio.run() (the integration tests) would fail
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 860}, locale="zh-TW")
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    page = context.new_page()
    page.set_default_timeout(30_000)
    return page


def screenshot(page: Page, name: str) -> Path:
    """Saves a screenshot under .cache/screenshots (the CI's artifacts); docs/ keeps chosen ones."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def run_async(fn: Callable[[], T]) -> T:
    """Run ``fn`` (which may call asyncio.run) on a fresh thread: while Playwright's sync API is active,
    this thread has a running event loop and asyncio.run() would refuse."""
    out: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread below
            errors.append(exc)

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return out[0]
