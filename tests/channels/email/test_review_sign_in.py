"""One click from the review page into the web inbox: a POST with the nonce, once per link.

The real server and SMTP relay. Fetching the review link (a scanner) signs
nobody in; the page's "Open the web inbox" button does, as the link's
approver, with the web inbox's own session cookie; once per link, and never
with a link that has answered or ended. Signing in decides nothing.
"""

from __future__ import annotations

import aiohttp

from tapgate.decisions.review_links import (
    LINK_EXPIRED,
    LINK_SIGNED_IN,
    LINK_USED,
    NOT_AN_APPROVER,
)
from tapgate.decisions.sign_in import SignIns
from tests.channels.email.harness import ALICE, BOB, LINK, Served, answer, page, post
from tests.fakes.served import until

SIGNED_IN = "inbox_signed_in"


def sign_in_of(link: str) -> str:
    return link + "/sign-in"


async def press(link: str, fields: dict[str, str], **headers: str) -> aiohttp.ClientResponse:
    """Post the page's "Open the web inbox" form; the response, redirects not followed."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(sign_in_of(link), data=fields, headers=headers, allow_redirects=False) as got,
    ):
        await got.read()
        return got


async def inbox_as(served: Served, cookie: str) -> tuple[int, str]:
    """``GET /inbox`` with a session cookie: status and page."""
    headers = {"Cookie": f"tapgate_session={cookie}"}
    async with (
        aiohttp.ClientSession() as http,
        http.get(served.url + "/inbox", headers=headers) as got,
    ):
        return got.status, await got.text()


async def sign_in_lines(served: Served) -> list[tuple[str, str]]:
    return [
        (a.event, a.actor) for a in await served.gate.audit_log() if a.event.startswith("inbox")
    ]


async def fresh_link(served: Served, address: str, old: set[str]) -> str:
    """The review link of ``address``'s newest request mail: one not in ``old``."""

    def new() -> list[str]:
        found = {str(u) for m in served.smtp.to(address) for u in LINK.findall(m.part("plain"))}
        return sorted(found - old)

    await until(lambda: len(new()) == 1)
    return new()[0]


async def test_fetching_the_link_signs_nobody_in(served: Served) -> None:
    await served.ask("deploy")
    link = await served.link(ALICE)
    for method in ("GET", "HEAD") * 3:
        async with aiohttp.ClientSession() as http, http.request(method, link) as got:
            assert got.status == 200 and "Set-Cookie" not in got.headers
        async with aiohttp.ClientSession() as http, http.request(method, sign_in_of(link)) as got:
            assert got.status == 405 and "Set-Cookie" not in got.headers
    _, text, _ = await page(link)
    assert "Open the web inbox as alice" in text
    assert await SignIns(served.gate).sessions_of("alice") == []
    assert await sign_in_lines(served) == []


async def test_the_button_signs_in_once_as_the_links_approver_and_decides_nothing(
    served: Served,
) -> None:
    request_id = await served.ask("deploy")
    link = await served.link(ALICE)
    _, _, fields = await page(link)
    got = await press(link, fields)
    assert got.status == 303 and got.headers["Location"] == "/inbox"
    cookie = got.cookies["tapgate_session"]
    assert cookie["httponly"] and cookie["samesite"] == "Strict" and cookie["path"] == "/inbox"
    status, inbox = await inbox_as(served, cookie.value)
    assert status == 200 and "alice" in inbox
    (session,) = await SignIns(served.gate).sessions_of("alice")
    assert session.via == "email"
    assert await sign_in_lines(served) == [("inbox_link_issued", "alice"), (SIGNED_IN, "alice")]
    assert (await served.gate.get_request(request_id)).is_pending  # signing in decided nothing

    again = await press(link, fields)  # once per link
    assert again.status == 410 and "tapgate_session" not in again.cookies
    _, text, _ = await page(link)
    assert "Open the web inbox" not in text  # the page stops offering it
    assert len(await SignIns(served.gate).sessions_of("alice")) == 1
    assert (await answer(link, "approve"))[0] == 200  # the link still answers, once
    assert (await served.gate.get_request(request_id)).status == "approved"


async def test_a_used_signed_in_or_expired_link_cannot_sign_in(served: Served) -> None:
    await served.ask("deploy")
    alice = await served.link(ALICE)
    _, _, fields = await page(alice)
    assert (await answer(alice, "approve"))[0] == 200
    status, text = await post(sign_in_of(alice), fields)
    assert status == 410 and LINK_USED in text
    await served.ask("deploy", {"env": "staging"})  # another call: the same one is answered
    bob = await fresh_link(served, BOB, {await served.link(BOB, index=0)})
    _, _, fields = await page(bob)
    assert (await press(bob, fields)).status == 303
    status, text = await post(sign_in_of(bob), fields)
    assert status == 410 and LINK_SIGNED_IN in text
    await served.ask("bash", {"command": "make"})
    late = await fresh_link(served, ALICE, {alice})
    _, _, fields = await page(late)
    served.clock.advance(601)  # the request has expired
    got = await press(late, fields)
    assert got.status == 410 and "tapgate_session" not in got.cookies
    status, text = await post(sign_in_of(late), fields)
    assert status == 410 and LINK_EXPIRED in text
    assert await SignIns(served.gate).sessions_of("alice") == []
    assert len(await SignIns(served.gate).sessions_of("bob")) == 1


async def test_another_approvers_link_signs_in_as_that_approver_only(served: Served) -> None:
    await served.ask("deploy")
    alice, bob = await served.link(ALICE), await served.link(BOB)
    _, _, alice_fields = await page(alice)
    _, _, bob_fields = await page(bob)
    assert (await press(bob, alice_fields)).status == 403  # alice's nonce, bob's link
    got = await press(bob, bob_fields)
    assert got.status == 303
    status, inbox = await inbox_as(served, got.cookies["tapgate_session"].value)
    assert status == 200 and "bob" in inbox
    assert await SignIns(served.gate).sessions_of("alice") == []
    assert [s.approver for s in await SignIns(served.gate).sessions_of("bob")] == ["bob"]
    assert (await press(alice, alice_fields)).status == 303  # alice's own link: alice
    assert len(await SignIns(served.gate).sessions_of("alice")) == 1


async def test_a_forged_press_signs_nobody_in(served: Served) -> None:
    await served.ask("deploy")
    link = await served.link(ALICE)
    _, _, fields = await page(link)
    assert (await press(link, {"csrf": "nope" * 6})).status == 403
    assert (await press(link, fields, Origin="https://evil.test")).status == 403
    assert (await press(link, fields, **{"Content-Type": "text/plain"})).status == 415
    unknown = link.rsplit("/", 1)[0] + "/" + "A" * 43
    assert (await press(unknown, fields)).status == 404
    assert await sign_in_lines(served) == []
    assert (await press(link, fields)).status == 303  # none of that used it up


async def test_a_batch_page_signs_in_too(served: Served) -> None:
    calls = [{"tool": "deploy", "arguments": {"env": e}} for e in ("a", "b")]
    await served.agent("POST", "/v1/tool-call-batches", {"calls": calls}, status=201)
    link = await served.link(ALICE)
    _, text, fields = await page(link)
    assert "Approve all" in text and "Open the web inbox as alice" in text
    assert (await press(link, fields)).status == 303


async def test_a_link_of_an_approver_no_longer_configured_signs_nobody_in(served: Served) -> None:
    request_id = await served.ask("deploy")
    await served.link(ALICE)
    # a link left from a config that had mallory: minted for her, as it would have been then
    stale = await served.stale_link(request_id, "mallory", "mallory@example.test")
    _, _, fields = await page(stale)
    status, text = await post(sign_in_of(stale), fields)
    assert status == 410 and NOT_AN_APPROVER in text
    assert await sign_in_lines(served) == []
