"""The inbox's pages and answers over plain HTTP: forms without script, batches, selections,
"Always" and its revoke, history filters, audit trails, sessions, paging, and what
the chats answer to ``inbox`` from a stranger or without a public URL.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from aiohttp.test_utils import TestServer

from tapgate.decisions.buttons import INBOX_ACTION_ID, INBOX_POSTBACK
from tapgate.decisions.texts import NO_INBOX, NO_INBOX_FOR_STRANGERS
from tapgate.gate.clock import ManualClock
from tapgate.server.app import build_app
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.served import ALICE, BOB, LINE_SECRET, LINE_TOKEN, until
from tests.fakes.taps import ReservedPort, signed_line_text
from tests.web.harness import Browser, Served, make_config

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def browsers(served: Served) -> AsyncIterator[tuple[Browser, Browser]]:
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as one,
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as two,
    ):
        alice, bob = Browser(served, one), Browser(served, two)
        assert await alice.sign_in(await served.line_link(ALICE)) == 200
        assert await bob.sign_in(await served.slack_link(BOB)) == 200
        yield alice, bob


async def ask(served: Served, env: str, session: str | None = "s1") -> str:
    body = {"tool": "deploy", "arguments": {"env": env}, "session": session}
    answer = await served.agent("POST", "/v1/tool-calls", body, status=201)
    request_id: str = answer["id"]
    return request_id


async def form(browser: Browser, path: str, **fields: str) -> aiohttp.ClientResponse:
    """A plain form post, as a browser without script sends it (no redirect followed)."""
    data = {"csrf": browser.csrf, **fields}
    async with browser.http.post(
        browser.served.url + path, data=data, allow_redirects=False
    ) as response:
        await response.read()
        return response


async def test_a_card_answered_without_script(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, _ = browsers
    request_id = await ask(served, "staging")
    page = await _text(alice, "/inbox")
    assert f'id="r-{request_id}"' in page and 'name="session"' in page
    answered = await form(
        alice, "/inbox/answer", request_id=request_id, action="approve", session="1"
    )
    assert (answered.status, answered.headers["Location"]) == (303, "/inbox")
    decided = await served.gate.get_request(request_id)
    assert (decided.status, decided.scope, decided.resolved_by) == ("approved", "session", "alice")
    assert request_id not in await _text(alice, "/inbox")


async def _text(browser: Browser, path: str) -> str:
    async with browser.http.get(browser.served.url + path) as response:
        assert response.status == 200
        return await response.text()


async def test_always_is_granted_listed_and_revoked_by_its_approver_only(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, bob = browsers
    request_id = await ask(served, "prod")
    status, body = await alice.post(
        "/inbox/answer",
        {"request_id": request_id, "action": "approve_always"},
        **{"X-CSRF-Token": alice.csrf},
    )
    assert (status, body["outcome"]) == (200, "applied")
    grants = [g for g in await served.gate.grants() if g.created_by == "alice"]
    assert len(grants) == 1 and grants[0].scope == "always"
    page = await _text(alice, "/inbox/grants")
    assert "deploy with exactly these arguments" in page
    assert grants[0].id not in await _text(bob, "/inbox/grants")
    refused = await form(bob, f"/inbox/grants/{grants[0].id}/revoke")
    assert refused.status == 403
    assert [g.id for g in await served.gate.grants()] == [grants[0].id]
    revoked = await form(alice, f"/inbox/grants/{grants[0].id}/revoke")
    assert revoked.status == 303
    assert await served.gate.grants() == []


async def test_allow_all_deny_all_and_a_selection(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, _ = browsers
    calls = [{"tool": "deploy", "arguments": {"env": f"b{n}"}} for n in range(3)]
    batch = await served.submit_batch(calls)
    token = {"X-CSRF-Token": alice.csrf}
    status, body = await alice.post(
        "/inbox/batch", {"batch_id": batch["id"], "action": "deny_all", "reason": "freeze"}, **token
    )
    assert status == 200 and len(body["ids"]) == 3
    for call in batch["calls"]:
        decided = await served.gate.get_request(call["id"])
        assert (decided.status, decided.resolution_reason) == ("denied", "freeze")
    one, two = await ask(served, "x1"), await ask(served, "x2")
    status, body = await alice.post(
        "/inbox/selection", {"ids": [one, two, one], "action": "approve"}, **token
    )
    assert (status, body["applied"]) == (200, 2)
    assert [(await served.gate.get_request(i)).status for i in (one, two)] == ["approved"] * 2
    status, body = await alice.post("/inbox/selection", {"ids": [], "action": "approve"}, **token)
    assert status == 400


async def test_history_filters_and_the_audit_trail(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, _ = browsers
    yes, no = await ask(served, "h1"), await ask(served, "h2")
    token = {"X-CSRF-Token": alice.csrf}
    await alice.post("/inbox/answer", {"request_id": yes, "action": "approve"}, **token)
    await alice.post(
        "/inbox/answer", {"request_id": no, "action": "deny", "reason": "<b>no</b>"}, **token
    )
    everything = await _text(alice, "/inbox/history")
    assert yes[:8] in everything and no[:8] in everything
    assert "&lt;b&gt;no&lt;/b&gt;" in everything and "<b>no</b>" not in everything
    denied = await _text(alice, "/inbox/history?outcome=denied&since=1h")
    assert no[:8] in denied and yes[:8] not in denied
    assert yes[:8] not in await _text(alice, "/inbox/history?tool=billing")
    trail = await _text(alice, f"/inbox/requests/{no}")
    assert "&quot;channel&quot;: &quot;web&quot;" in trail and "alice" in trail
    async with alice.http.get(served.url + "/inbox/requests/nope") as missing:
        assert missing.status == 404


async def test_sessions_are_listed_and_one_revoked(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, _ = browsers
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as other:
        phone = Browser(served, other)
        assert await phone.sign_in(await served.slack_link(ALICE)) == 200
        listed = await _text(alice, "/inbox/sessions")
        assert listed.count("Revoke") == 2 and "(this browser)" in listed
        from tapgate.server.keys import SIGN_INS

        sessions = await served.app[SIGN_INS].sessions_of("alice")
        theirs = next(s for s in sessions if s.via == "slack")
        assert (await form(alice, f"/inbox/sessions/{theirs.id}/revoke")).status == 303
        assert (await phone.get("/inbox")).status == 401
        assert (await alice.get("/inbox")).status == 200


async def test_a_long_queue_is_paged(served: Served, browsers: tuple[Browser, Browser]) -> None:
    _, bob = browsers
    for batch in ("p", "q"):
        await served.submit_batch(
            [{"tool": "deploy", "arguments": {"env": f"{batch}{n}"}} for n in range(30)]
        )
    first = await _text(bob, "/inbox")
    assert first.count('class="card') == 40 and "60 pending for you" in first
    assert 'href="/inbox?from=40"' in first
    rest = await _text(bob, "/inbox?from=40")
    assert rest.count('class="card') == 20
    async with bob.http.get(served.url + "/inbox/queue?ids=1") as response:
        ids = await response.json()
    assert ids["total"] == 60 and len(ids["ids"]) == 40
    # Past the end, however far (an OFFSET past 2**63 - 1 was a 500): an empty page.
    for start in ("60", str(2**63), "9" * 30):
        past = await _text(bob, f"/inbox?from={start}")
        assert 'class="card' not in past and "60 pending for you" in past
        async with bob.http.get(served.url + f"/inbox/queue?ids=1&from={start}") as response:
            assert (response.status, await response.json()) == (200, {"ids": [], "total": 60})


async def test_what_the_chats_answer_strangers(served: Served) -> None:
    before = len(served.line.replies)
    body, headers = signed_line_text(LINE_SECRET, "U" + "ee" * 16, "inbox")
    await served._post("/webhooks/line", body, headers)
    await until(lambda: len(served.line.replies) > before)
    told = [m["text"] for r in served.line.replies[before:] for m in r.messages]
    assert told == [NO_INBOX_FOR_STRANGERS]
    from tapgate.server.keys import SIGN_INS

    assert await served.app[SIGN_INS].sessions_of("alice") == []


async def test_without_a_public_url_the_chat_says_so(tmp_path: Path) -> None:
    reserved = ReservedPort()
    async with FakeSlack() as slack, FakeLine(access_token=LINE_TOKEN) as line:
        config = make_config(slack.url, line.url, f"sqlite:///{tmp_path / 'x.db'}", reserved.port)
        config = config.model_copy(
            update={"server": config.server.model_copy(update={"public_url": None})}
        )
        server = TestServer(
            build_app(config, clock=ManualClock()),
            host="127.0.0.1",
            port=reserved.port,
            socket_factory=reserved.socket_factory,
        )
        await server.start_server()
        try:
            served = Served(
                app=server.app, server=server, slack=slack, line=line, clock=ManualClock()
            )
            body, headers = signed_line_text(LINE_SECRET, ALICE[1], "inbox")
            await served._post("/webhooks/line", body, headers)
            await until(lambda: len(line.replies) == 1)
            assert [m["text"] for m in line.replies[0].messages] == [NO_INBOX]
        finally:
            await server.close()


async def test_every_card_offers_open_inbox(served: Served) -> None:
    await ask(served, "cards")
    await served.submit_batch([{"tool": "deploy", "arguments": {"env": f"c{n}"}} for n in range(2)])
    # LINE is not paced: all four cards; Slack paces each DM by the (manual) clock: two
    await until(lambda: len(served.slack.posts) >= 2 and len(served.line.pushes) >= 4)
    for post in served.slack.posts:
        assert INBOX_ACTION_ID in json.dumps(post.blocks)
    for push in served.line.pushes:
        assert INBOX_POSTBACK in json.dumps(push.messages)


async def test_slack_help_lists_inbox(served: Served) -> None:
    helped = await served.slash(ALICE, "frobnicate")
    assert "is not a tapgate command" in helped and "/tapgate inbox" in helped
    assert served.slack.ephemerals == [] and served.slack.responses == []


async def test_history_masks_a_reason_as_every_other_surface_does(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    """A deny reason is masked wherever tapgate shows it (docs/notifications.md); the
    history page showed it as typed, credential and all."""
    alice, _ = browsers
    token = "ghp" + "_" + "R2l0SHViVG9rZW5Gb3JUZXN0czAxMjM0NTY3"
    no = await ask(served, "h3")
    await alice.post(
        "/inbox/answer",
        {"request_id": no, "action": "deny", "reason": f"rotate {token} first"},
        **{"X-CSRF-Token": alice.csrf},
    )
    assert (await served.gate.get_request(no)).status == "denied"
    history = await _text(alice, "/inbox/history")
    assert "rotate ghp_" in history and token[6:] not in history


async def test_the_grants_page_shows_a_session_as_the_card_does(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    """The API refuses bidi characters in a session name, not zero-width ones; the card
    shows them as ``⟨U+200B⟩``, the grants page showed the name raw, so two sessions
    that read alike could not be told apart before revoking one."""
    alice, _ = browsers
    hidden = "s\u200b2\u200d\u2060\ufeff"
    request_id = await ask(served, "zw", session=hidden)
    card = await _text(alice, "/inbox")
    shown = "s⟨U+200B⟩2⟨U+200D⟩⟨U+2060⟩⟨U+FEFF⟩"
    assert shown in card
    answered = await form(
        alice, "/inbox/answer", request_id=request_id, action="approve", session="1"
    )
    assert answered.status == 303
    [grant] = [g for g in await served.gate.grants() if g.session == hidden]
    page = await _text(alice, "/inbox/grants")
    assert shown in page and "\u200b" not in page
    assert (await form(alice, f"/inbox/grants/{grant.id}/revoke")).status == 303
