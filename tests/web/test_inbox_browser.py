"""The web inbox in a real headless Chromium, against the real server and the fake chats.

Signed in through the link the fake Slack / LINE API was asked to show; an
agent's batch answered with the keys alone; a Slack tap removing a card
without a reload; history; hostile arguments shown as text with no script
running; a keyboard-only walk through ten requests. Screenshots for
``docs/inbox.md`` are taken here (``TAPGATE_SCREENSHOTS=1``).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from tests.fakes import dm_channel_for
from tests.fakes.served import ALICE, BOB, click
from tests.web.harness import Served

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = pytest.mark.asyncio(loop_scope="module")

IMAGES = Path(__file__).parents[2] / "docs" / "images"
SHOOT = os.environ.get("TAPGATE_SCREENSHOTS") == "1"


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A fresh browser context (no cookies) and page; dialogs and console errors are failures."""
    context = await browser.new_context(viewport={"width": 1000, "height": 760})
    context.set_default_timeout(10_000)
    opened = await context.new_page()
    problems: list[str] = []
    opened.on("dialog", lambda d: problems.append(f"dialog: {d.message}"))
    opened.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    yield opened
    await context.close()
    assert not problems, problems


async def sign_in(page: Page, link: str) -> None:
    await page.goto(link)
    await page.get_by_role("button", name="Sign in").click()
    try:
        await page.wait_for_url("**/inbox")
    except Exception:
        print(page.url, await page.content())
        raise


async def shoot(page: Page, name: str) -> None:
    if SHOOT:
        IMAGES.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(IMAGES / name))


async def focused_id(page: Page) -> str:
    found: Any = await page.evaluate("document.activeElement.closest('article.card')?.dataset.id")
    assert isinstance(found, str), found
    return found


DEPLOYS = [
    {"tool": "deploy", "arguments": {"env": "staging", "version": "1.4.2"}},
    {"tool": "deploy", "arguments": {"env": "prod", "version": "1.4.2"}},
    {"tool": "deploy", "arguments": {"env": "canary", "version": "1.4.2"}},
]


async def test_a_batch_answered_with_the_keys_and_a_slack_tap_seen_live(
    served: Served, page: Page
) -> None:
    await sign_in(page, await served.slack_link(ALICE))
    await page.evaluate("window.__sameDocument = true")
    batch = await served.submit_batch(DEPLOYS)
    ids = [c["id"] for c in batch["calls"]]
    await page.locator("article.card").nth(2).wait_for()  # pushed live: no reload
    await shoot(page, "inbox-batch.png")

    first = await focused_id(page)
    await page.keyboard.press("Enter")
    await page.locator(f"#r-{first}").wait_for(state="detached")
    second = await focused_id(page)
    await page.keyboard.press("r")
    await page.keyboard.type("not on a Friday")
    await page.keyboard.press("Escape")  # back to the card, reason kept
    await page.keyboard.press("Escape")  # deny, with the reason
    await page.locator(f"#r-{second}").wait_for(state="detached")
    third = await focused_id(page)
    await page.keyboard.press("e")  # edit the third, then approve it
    await page.wait_for_url(f"**/inbox/requests/{third}/edit")
    await page.get_by_label("version").fill("1.4.3")
    await shoot(page, "inbox-edit.png")
    await page.get_by_role("button", name="Approve with these arguments").press("Enter")
    await page.wait_for_url("**/inbox")
    await page.evaluate("window.__sameDocument = true")
    assert await page.locator(f"#r-{third}").count() == 0

    polled = await served.agent("GET", f"/v1/tool-call-batches/{batch['id']}?wait=5")
    by_id = {c["id"]: c for c in polled["calls"]}
    assert {by_id[first]["status"], by_id[third]["status"]} == {"approved"}
    assert by_id[third]["edited"] is True and by_id[first].get("edited") is not True
    assert by_id[third]["arguments"]["version"] == "1.4.3"
    assert by_id[third]["arguments"]["env"] in {"staging", "prod", "canary"}
    assert by_id[second]["status"] == "denied"
    assert "not on a Friday" in by_id[second]["reason"]
    assert all(by_id[i]["decided_by"] == "alice" for i in ids)
    audit = await served.gate.audit_log(request_id=first)
    assert any(a.detail.get("channel") == "web" for a in audit)

    # A request decided in Slack leaves the page without a reload, saying who decided.
    single = await served.agent(
        "POST",
        "/v1/tool-calls",
        {"tool": "deploy", "arguments": {"env": "eu"}, "session": "s2"},
        status=201,
    )
    card = page.locator(f"#r-{single['id']}")
    await card.wait_for()
    await served.slack_tap(click("approve", single["id"], BOB, dm_channel_for(BOB[0])))
    await card.wait_for(state="detached")
    await page.get_by_role("status").filter(has_text="approved by bob").wait_for()
    assert await page.evaluate("window.__sameDocument") is True

    await page.get_by_role("link", name="History").click()
    rows = page.locator("#history tbody tr")
    await rows.nth(3).wait_for()
    assert await rows.count() == 4
    text = await page.locator("#history").inner_text()
    assert "not on a Friday" in text and "bob" in text
    await shoot(page, "inbox-history.png")


async def test_hostile_arguments_are_shown_as_text(served: Served, page: Page) -> None:
    await sign_in(page, await served.line_link(ALICE))
    hostile = {
        "env": "<script>alert(1)</script>",
        "note": '<img src=x onerror="alert(2)">',
        "path": '"><svg onload=alert(3)>',
    }
    await served.agent(
        "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": hostile}, status=201
    )
    card = page.locator("article.card")
    await card.wait_for()
    text = await card.inner_text()
    assert "<script>alert(1)</script>" in text
    assert '<img src=x onerror=\\"alert(2)\\">' in text  # shown as the JSON string it is
    assert "<svg onload=alert(3)>" in text
    assert (
        await page.locator("article.card script, article.card img, article.card svg").count() == 0
    )
    await page.reload()
    await card.wait_for()
    assert await page.locator("main script, main img").count() == 0
    # The page fixture fails the test on any dialog or console error (a script that ran).


async def test_a_keyboard_only_walk_through_ten(served: Served, page: Page) -> None:
    await sign_in(page, await served.line_link(BOB))
    created = []
    for n in range(10):
        answer = await served.agent(
            "POST",
            "/v1/tool-calls",
            {"tool": "deploy", "arguments": {"env": f"env-{n}"}, "session": "walk"},
            status=201,
        )
        created.append(answer["id"])
    await page.reload()
    cards = page.locator("article.card")
    await cards.nth(9).wait_for()
    await page.keyboard.press("?")
    await page.get_by_role("dialog", name="Keys").wait_for()
    await shoot(page, "inbox-keys.png")
    await page.keyboard.press("Escape")  # closes the list of keys, decides nothing
    assert await cards.count() == 10

    await page.keyboard.press("j")
    await page.keyboard.press("j")
    await page.keyboard.press("k")
    seen = {await focused_id(page)}
    for n in range(10):
        target = await focused_id(page)
        await page.keyboard.press("Enter" if n % 2 == 0 else "Escape")
        await page.locator(f"#r-{target}").wait_for(state="detached")
        seen.add(target)
    assert seen == set(created)
    await page.locator("#count").filter(has_text="Nothing waits for you.").wait_for()
    statuses = [(await served.gate.get_request(i)).status for i in created]
    assert statuses.count("approved") == 5 and statuses.count("denied") == 5


async def test_a_reason_being_typed_survives_a_new_request(served: Served, page: Page) -> None:
    await sign_in(page, await served.line_link(ALICE))
    first = await served.agent(
        "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": {"env": "one"}}, status=201
    )
    await page.locator(f"#r-{first['id']}").wait_for()
    await page.keyboard.press("r")
    await page.keyboard.type("half a th")
    await served.agent(
        "POST", "/v1/tool-calls", {"tool": "deploy", "arguments": {"env": "two"}}, status=201
    )
    await page.locator("article.card").nth(1).wait_for()  # redrawn with the new one
    await page.keyboard.type("ought")
    await page.keyboard.press("Enter")  # in the reason field: deny with it
    await page.locator(f"#r-{first['id']}").wait_for(state="detached")
    decided = await served.gate.get_request(first["id"])
    assert (decided.status, decided.resolution_reason) == ("denied", "half a thought")


async def test_whole_batches_and_selections_by_key(served: Served, page: Page) -> None:
    await sign_in(page, await served.slack_link(BOB))
    denied = await served.submit_batch(DEPLOYS)
    await page.locator("article.card").nth(2).wait_for()
    await page.keyboard.press("Alt+Escape")  # every open call of the focused call's batch
    for call in denied["calls"]:
        await page.locator(f"#r-{call['id']}").wait_for(state="detached")
    allowed = await served.submit_batch(  # not DEPLOYS again: its denial answers re-issues
        [{"tool": "deploy", "arguments": {"env": e}} for e in ("us", "ap")]
    )
    await page.locator("article.card").nth(1).wait_for()
    await page.keyboard.press("Alt+Enter")
    for call in allowed["calls"]:
        await page.locator(f"#r-{call['id']}").wait_for(state="detached")
    picked = [
        (await served.agent("POST", "/v1/tool-calls", call, status=201))["id"]
        for call in ({"tool": "deploy", "arguments": {"env": e}} for e in ("s1", "s2", "s3"))
    ]
    await page.locator("article.card").nth(2).wait_for()
    # From the first card: a redraw for a late event may have left the focus on the last
    # one, where "j" cannot move and the second "x" would clear the first (seen under load).
    await page.locator("article.card").first.focus()
    await page.keyboard.press("x")
    await page.keyboard.press("j")
    await page.keyboard.press("x")
    await page.get_by_role("button", name="Allow selected").click()
    await page.locator("article.card").nth(1).wait_for(state="detached")
    statuses = {i: (await served.gate.get_request(i)).status for i in picked}
    assert sorted(statuses.values()) == ["approved", "approved", "pending"]
    for call in denied["calls"]:
        assert (await served.gate.get_request(call["id"])).status == "denied"
    for call in allowed["calls"]:
        assert (await served.gate.get_request(call["id"])).status == "approved"
