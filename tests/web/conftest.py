"""The web inbox under test: the real server on a loopback port, the fake chats, one Chromium.

The server is the real app (``build_app``) on 127.0.0.1 with a manual clock,
talking to the fake Slack and LINE APIs; the browser is Debian's
``chromium`` driven by Playwright, started once per test module (a launch
costs about a second) with a fresh context (cookies, storage) per test.

Without Chromium the browser tests skip, unless ``TAPGATE_REQUIRE_BROWSER=1``
(``.ci/run`` exports it after installing the package), where they fail.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.web.harness import Served, serving

CHROMIUM = os.environ.get("TAPGATE_CHROMIUM", "/usr/bin/chromium")


def _require_browser() -> None:
    if shutil.which(CHROMIUM) is None:
        if os.environ.get("TAPGATE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} is missing (apt-get install chromium)")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[object]:
    """One headless Chromium per module (Playwright's Browser; typed loosely, imported lazily)."""
    _require_browser()
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        yield launched
        await launched.close()


@pytest_asyncio.fixture(loop_scope="module")
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    """A fresh database, server and fake chats for each test."""
    async with serving(migrated_sqlite_url) as found:
        yield found
