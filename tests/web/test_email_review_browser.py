"""The email review page in a real headless Chromium: the mail read from the relay, then answered.

The real server and the fake SMTP relay (:mod:`tests.channels.email.harness`);
the browser is Debian's ``chromium`` from this folder's ``conftest.py``. The
mail's HTML part is opened in the browser as a mail client shows it and its
link is clicked; the review page is read and answered with its own buttons
(no script: the page has none), while the agent long-polls. A second load of
the page shows the request decided and offers no form. "Edit, then approve"
is typed in and submitted, with JavaScript on and off, and the agent gets
exactly the edited arguments; "Open the web inbox" signs the browser in as
the link's approver with one click (and opening the link never does).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from tests.channels.email.harness import ALICE, BOB, Served, serving

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = pytest.mark.asyncio(loop_scope="module")

PHONE = {"width": 390, "height": 844}
DESK = {"width": 1000, "height": 760}


@pytest_asyncio.fixture(loop_scope="module")
async def mailed(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    """A fresh database, server and SMTP relay for each test."""
    async with serving(migrated_sqlite_url) as found:
        yield found


async def _page(
    browser: Browser, viewport: dict[str, int], *, script: bool = True
) -> tuple[Page, list[str]]:
    context = await browser.new_context(viewport=viewport, java_script_enabled=script)  # type: ignore[arg-type]
    context.set_default_timeout(10_000)
    opened = await context.new_page()
    problems: list[str] = []
    opened.on("dialog", lambda d: problems.append(f"dialog: {d.message}"))
    opened.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    opened.on("console", lambda m: problems.append(m.text) if _problem(m.type, m.text) else None)
    return opened, problems


def _problem(kind: str, text: str) -> bool:
    """A console error, except Chromium's note of a 4xx page the test loads on purpose."""
    return kind == "error" and not any(f"status of {s}" in text for s in (410, 422))


@pytest_asyncio.fixture(loop_scope="module")
async def desk(browser: Browser) -> AsyncIterator[Page]:
    """A fresh context and page; a dialog, a script error or a CSP violation fails the test."""
    opened, problems = await _page(browser, DESK)
    yield opened
    await opened.context.close()
    assert not problems, problems


@pytest_asyncio.fixture(loop_scope="module")
async def phone(browser: Browser) -> AsyncIterator[Page]:
    """The same, at a phone's width."""
    opened, problems = await _page(browser, PHONE)
    yield opened
    await opened.context.close()
    assert not problems, problems


@pytest_asyncio.fixture(loop_scope="module", params=["script", "no script"])
async def either(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A desk page with JavaScript on, then off: the review pages need none."""
    opened, problems = await _page(browser, DESK, script=request.param == "script")
    yield opened
    await opened.context.close()
    assert not problems, problems


async def open_from_mail(page: Page, served: Served, address: str) -> str:
    """Show ``address``'s first mail (its HTML part), click its link; the review page's URL."""
    mail = (await served.mails_to(address))[0]
    await page.goto("about:blank")  # a document of its own: not under the last page's CSP
    await page.set_content(mail.part("html"))
    await page.get_by_role("link", name="Review and answer").click()
    await page.wait_for_url("**/email/review/*")
    return page.url


def long_poll(served: Served, request_id: str) -> asyncio.Task[dict[str, Any]]:
    """The agent waiting for its answer, parked before anyone answers."""
    return asyncio.create_task(served.agent("GET", f"/v1/tool-calls/{request_id}?wait=30"))


async def test_open_the_mailed_link_see_the_request_approve_and_the_agent_resumes(
    mailed: Served, desk: Page
) -> None:
    request_id = await mailed.ask("deploy", {"env": "prod", "version": "2.0.1"})
    waiting = long_poll(mailed, request_id)
    link = await open_from_mail(desk, mailed, ALICE)

    await desk.get_by_role("heading", name="Review request").wait_for()
    text = await desk.locator("main").inner_text()
    assert "deploy" in text and "2.0.1" in text and "alice" in text
    assert await desk.locator("script").count() == 0
    for _ in range(3):  # opening it again (a scanner, a second look) decides nothing
        await desk.goto(link)
    assert (await mailed.gate.get_request(request_id)).is_pending
    assert not waiting.done()

    await desk.get_by_role("button", name="Approve", exact=True).click()
    await desk.get_by_role("alert").filter(has_text="Approved").wait_for()
    resumed = await asyncio.wait_for(waiting, 10)
    assert resumed["status"] == "approved" and resumed["decided_by"] == "alice"
    audit = await mailed.gate.audit_log(request_id=request_id)
    assert [a.event for a in audit] == ["requested", "approved"]

    again = await desk.goto(link)  # a second load of the page: decided, nothing to press
    assert again is not None and again.status == 410
    shown = await desk.get_by_role("alert").inner_text()
    assert "already used" in shown
    assert "approved by alice" in (await desk.locator("main").inner_text())
    assert await desk.locator("form").count() == 0

    bob = await open_from_mail(desk, mailed, BOB)  # the other approver's own link
    assert bob != link
    assert "Already approved by alice" in await desk.get_by_role("alert").inner_text()
    assert await desk.locator("form").count() == 0


async def test_deny_with_a_reason_on_a_phone(mailed: Served, phone: Page) -> None:
    request_id = await mailed.ask("deploy", {"env": "prod"})
    waiting = long_poll(mailed, request_id)
    await open_from_mail(phone, mailed, BOB)
    deny = phone.get_by_role("button", name="Deny")
    box = await deny.bounding_box()
    assert box is not None and box["height"] >= 44 and box["x"] + box["width"] <= PHONE["width"]
    await phone.get_by_label("Reason").fill("not during the freeze")
    await deny.click()
    await phone.get_by_role("alert").filter(has_text="Denied").wait_for()
    resumed = await asyncio.wait_for(waiting, 10)
    assert resumed["status"] == "denied" and resumed["decided_by"] == "bob"
    assert "not during the freeze" in resumed["reason"]


async def test_edit_an_argument_and_the_agent_gets_exactly_the_edit(
    mailed: Served, either: Page
) -> None:
    request_id = await mailed.ask("deploy", {"env": "prod", "replicas": 3, "note": "<b>hi</b>"})
    waiting = long_poll(mailed, request_id)
    await open_from_mail(either, mailed, ALICE)
    await either.get_by_role("link", name="Edit, then approve").click()
    await either.get_by_role("heading", name="Edit deploy").wait_for()
    assert await either.get_by_label("note").input_value() == "<b>hi</b>"  # text, not markup
    await either.get_by_label("env").fill("staging")
    await either.get_by_label("replicas").fill("2")
    assert (await mailed.gate.get_request(request_id)).is_pending  # typing decides nothing
    await either.get_by_role("button", name="Approve with these arguments").click()
    await either.get_by_role("alert").filter(has_text="Approved").wait_for()
    resumed = await asyncio.wait_for(waiting, 10)
    assert resumed["status"] == "approved" and resumed["edited"] is True
    assert resumed["arguments"] == {"env": "staging", "replicas": 2, "note": "<b>hi</b>"}
    assert resumed["decided_by"] == "alice"


async def test_a_refused_edit_keeps_the_typing_and_the_link(mailed: Served, either: Page) -> None:
    request_id = await mailed.ask("deploy", {"env": "prod"})
    link = await open_from_mail(either, mailed, ALICE)
    await either.get_by_role("link", name="Edit, then approve").click()
    await either.get_by_label("env").fill("forbidden")  # the policy denies deploys there
    await either.get_by_role("button", name="Approve with these arguments").click()
    await either.get_by_role("alert").filter(has_text="never to forbidden").wait_for()
    assert await either.get_by_label("env").input_value() == "forbidden"
    assert (await mailed.gate.get_request(request_id)).is_pending
    await either.goto(link)  # the link still answers
    await either.get_by_role("button", name="Approve", exact=True).click()
    await either.get_by_role("alert").filter(has_text="Approved").wait_for()


async def test_one_click_from_the_review_page_into_the_inbox(mailed: Served, desk: Page) -> None:
    request_id = await mailed.ask("deploy", {"env": "prod"})
    link = await open_from_mail(desk, mailed, BOB)
    assert await desk.context.cookies() == []  # opening the link signed nobody in
    await desk.get_by_role("button", name="Open the web inbox as bob").click()
    await desk.wait_for_url("**/inbox")
    (cookie,) = await desk.context.cookies()
    assert cookie["name"] == "tapgate_session" and cookie["httpOnly"] and cookie["path"] == "/inbox"
    assert "bob" in await desk.locator("header").inner_text()
    await desk.get_by_text(request_id[:8]).first.wait_for()  # bob's pending request is listed
    assert (await mailed.gate.get_request(request_id)).is_pending  # signing in decided nothing
    await desk.goto(link)  # the link still answers, but signs in no more
    assert await desk.get_by_role("button", name="Open the web inbox as bob").count() == 0
    await desk.get_by_role("button", name="Approve", exact=True).click()
    await desk.get_by_role("alert").filter(has_text="Approved").wait_for()
