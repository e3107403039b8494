"""What the web inbox refuses, each time without any change in the store.

Plain HTTP against the real server (a browser adds nothing to a refusal):
used, expired and another approver's links; a cookie replayed after
sign-out, and the live events of a page whose session ends; a state change
without the CSRF token or from another origin; a non-approver's answer; an
agent's bearer token; and the headers every page carries (CSP, cookie flags).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from yarl import URL

from tapgate.decisions.sign_in import LINK_TTL
from tests.fakes.served import AGENT_TOKEN, ALICE, BOB, CAROL
from tests.web.harness import Browser, Served, serving

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module")
async def browsers(served: Served) -> AsyncIterator[tuple[Browser, Browser]]:
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as one,
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as two,
    ):
        yield Browser(served, one), Browser(served, two)


async def a_request(served: Served, tool: str = "deploy", env: str = "x") -> str:
    answer = await served.agent(
        "POST", "/v1/tool-calls", {"tool": tool, "arguments": {"env": env}}, status=201
    )
    request_id: str = answer["id"]
    return request_id


async def sessions(served: Served, approver: str) -> int:
    from tapgate.server.keys import SIGN_INS

    return len(await served.app[SIGN_INS].sessions_of(approver))


async def test_a_link_works_once(served: Served, browsers: tuple[Browser, Browser]) -> None:
    mine, thief = browsers
    link = await served.line_button_link(ALICE)  # "Open inbox" under a LINE card
    assert await mine.sign_in(link) == 200
    assert await thief.sign_in(link) == 410
    assert await sessions(served, "alice") == 1
    assert (await thief.get("/inbox")).status == 401


async def test_who_got_in_is_audited(served: Served, browsers: tuple[Browser, Browser]) -> None:
    """Issued, signed in, a replay refused, signed out: audit lines; a made-up token: none."""
    mine, thief = browsers
    before = len(await served.gate.audit_log())
    link = await served.slack_link(ALICE)
    assert await mine.sign_in(link) == 200
    assert await thief.sign_in(link) == 410
    made_up = link.split("token=")[0] + "token=" + "A" * 43
    assert await thief.sign_in(made_up) in (404, 410)
    async with mine.http.post(served.url + "/inbox/sign-out", data={"csrf": mine.csrf}) as out:
        assert out.status == 200
    lines = (await served.gate.audit_log())[before:]
    assert [(a.event, a.actor, a.request_id) for a in lines] == [
        ("inbox_link_issued", "alice", None),
        ("inbox_signed_in", "alice", None),
        ("inbox_sign_in_refused", "alice", None),
        ("inbox_session_revoked", "alice", None),
    ]
    assert lines[0].detail["via"] == "slack" and lines[2].detail["why"] == "used"
    assert lines[1].detail["session"] == lines[3].detail["session"]


async def test_an_expired_link_is_refused(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    link = await served.slack_link(ALICE)
    served.clock.advance(LINK_TTL.total_seconds() + 1)
    assert await browsers[0].sign_in(link) == 410
    assert await sessions(served, "alice") == 0
    last = (await served.gate.audit_log())[-1]
    assert (last.event, last.actor, last.detail) == (
        "inbox_sign_in_refused",
        "alice",
        {"why": "expired"},
    )


async def test_another_approvers_link_does_not_switch_identity(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, _ = browsers
    assert await alice.sign_in(await served.line_link(ALICE)) == 200
    bobs = await served.line_link(BOB)
    status, fields = await alice.open_link(bobs)
    assert status == 409 and not fields
    token = bobs.split("token=")[1]
    for pre in ("x", ""):  # not the value the link page set (nor an empty one): nothing used
        async with alice.http.post(
            served.url + "/inbox/sign-in", data={"token": token, "pre": pre}
        ) as response:
            assert response.status == 403
    assert await sessions(served, "bob") == 0
    assert await browsers[1].sign_in(bobs) == 200  # still unused: bob can sign in with it
    assert "Signed in as <b>alice</b>" in await (await alice.http.get(served.url + "/inbox")).text()


async def test_a_cookie_replayed_after_sign_out_opens_nothing(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, replay = browsers
    assert await alice.sign_in(await served.slack_button_link(ALICE)) == 200  # a card's button
    cookies = alice.http.cookie_jar.filter_cookies(URL(served.url + "/inbox"))
    stolen = cookies["tapgate_session"].value
    request_id = await a_request(served)
    async with alice.http.post(served.url + "/inbox/sign-out", data={"csrf": alice.csrf}) as out:
        assert out.status == 200 and "Signed out" in await out.text()
    replay.http.cookie_jar.update_cookies({"tapgate_session": stolen}, URL(served.url + "/inbox"))
    assert (await replay.get("/inbox")).status == 401
    status, body = await replay.post(
        "/inbox/answer",
        {"request_id": request_id, "action": "approve"},
        **{"X-CSRF-Token": alice.csrf},
    )
    assert (status, body["error"]) == (401, "signed_out")
    assert (await served.gate.get_request(request_id)).status == "pending"


async def test_an_open_page_hears_nothing_after_its_session_ends(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, _ = browsers
    assert await alice.sign_in(await served.line_link(ALICE)) == 200
    async with alice.http.get(served.url + "/inbox/events") as stream:
        assert await stream.content.readline() == b": connected\n"
        before = await a_request(served, env="live-1")
        heard = b""
        while before.encode() not in heard:  # a live session hears of a new request
            heard += await asyncio.wait_for(stream.content.readline(), 10)
        signed_out = await alice.http.post(
            served.url + "/inbox/sign-out", data={"csrf": alice.csrf}
        )
        assert signed_out.status == 200
        after = await a_request(served, env="live-2")
        rest = await asyncio.wait_for(stream.content.read(), 10)  # the server ends the stream
    assert b"event: signed_out" in rest and after.encode() not in rest


async def test_state_changes_need_the_csrf_token_and_this_origin(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, _ = browsers
    assert await alice.sign_in(await served.line_link(ALICE)) == 200
    request_id = await a_request(served)
    answer = {"request_id": request_id, "action": "approve"}
    assert (await alice.post("/inbox/answer", answer))[0] == 403
    assert (await alice.post("/inbox/answer", answer, **{"X-CSRF-Token": "wrong"}))[0] == 403
    elsewhere = {"X-CSRF-Token": alice.csrf, "Origin": "https://evil.example"}
    assert (await alice.post("/inbox/answer", answer, **elsewhere))[0] == 403
    assert (await served.gate.get_request(request_id)).status == "pending"
    status, body = await alice.post("/inbox/answer", answer, **{"X-CSRF-Token": alice.csrf})
    assert (status, body["outcome"]) == (200, "applied")


async def test_a_non_approver_cannot_decide(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    carol, _ = browsers
    assert await carol.sign_in(await served.line_link(CAROL)) == 200
    request_id = await a_request(served)  # deploys go to oncall: alice and bob
    page = await (await carol.http.get(served.url + "/inbox")).text()
    assert request_id not in page
    status, body = await carol.post(
        "/inbox/answer",
        {"request_id": request_id, "action": "approve"},
        **{"X-CSRF-Token": carol.csrf},
    )
    assert (status, body["outcome"]) == (409, "not_approver")
    assert body["message"] == "You are not an approver for this request."
    assert (await served.gate.get_request(request_id)).status == "pending"
    audit = await served.gate.audit_log(request_id=request_id)
    assert any(a.event == "refused" and a.actor == "carol" for a in audit)


async def test_a_non_approver_cannot_decide_by_selection_or_batch(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    """The multi-request answers go through the same per-request check as one answer."""
    carol, _ = browsers
    assert await carol.sign_in(await served.line_link(CAROL)) == 200
    request_id = await a_request(served)  # deploys go to oncall: alice and bob
    batch = await served.submit_batch([{"tool": "deploy", "arguments": {"env": "b1"}}])
    member = batch["calls"][0]["id"]
    token = {"X-CSRF-Token": carol.csrf}
    status, body = await carol.post(
        "/inbox/selection", {"ids": [request_id, member], "action": "approve"}, **token
    )
    assert status == 200 and body["applied"] == 0
    assert {r["outcome"] for r in body["results"]} == {"not_approver"}
    status, body = await carol.post(
        "/inbox/batch", {"batch_id": batch["id"], "action": "approve_all"}, **token
    )
    assert status == 409 and body["ids"] == []
    for pending in (request_id, member):
        assert (await served.gate.get_request(pending)).status == "pending"


async def test_agent_tokens_never_open_the_inbox(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, _ = browsers
    assert await alice.sign_in(await served.line_link(ALICE)) == 200
    request_id = await a_request(served)
    bearer = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    assert (await alice.get("/inbox", **bearer)).status == 403
    status, _ = await alice.post(
        "/inbox/answer",
        {"request_id": request_id, "action": "approve"},
        **bearer,
        **{"X-CSRF-Token": alice.csrf},
    )
    assert status == 403
    assert (await served.gate.get_request(request_id)).status == "pending"


async def test_every_page_carries_a_strict_policy_and_safe_cookies(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    alice, _ = browsers
    link = await served.line_link(ALICE)
    _, fields = await alice.open_link(link)
    async with alice.http.post(
        served.url + "/inbox/sign-in", data=fields, allow_redirects=False
    ) as response:
        assert response.status == 303
        cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/inbox" in cookie
    assert "Secure" not in cookie  # http://127.0.0.1: a Secure cookie would never come back
    page = await alice.get("/inbox")
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp
    assert "unsafe-inline" not in csp
    assert page.headers["X-Frame-Options"] == "DENY"


# Bodies a client chooses to send that the server cannot read: JSON no store
# can encode (lone surrogates) or that nests past any parser's recursion, and
# forms aiohttp's post() raises on. Each was a 500; each must be a 400.
DEEP = b"[" * 5000 + b"]" * 5000
UNREADABLE = [
    (b'{"request_id": "\\ud800", "action": "approve"}', "application/json"),
    (b'{"request_id": "ID", "action": "deny", "reason": "no \\udfff"}', "application/json"),
    (b'{"request_id": "ID", "action": "approve", "x": ' + DEEP + b"}", "application/json"),
    (b"\xff=\xff&request_id=ID&action=approve", "application/x-www-form-urlencoded"),
    (b"request_id=ID&action=approve", "application/x-www-form-urlencoded; charset=bogus"),
    (b"--x\r\nno part ends", "multipart/form-data; boundary=x"),
    (b"request_id=ID&action=approve", "multipart/form-data"),
]


async def post_raw(
    browser: Browser, path: str, raw: bytes, content_type: str, **headers: str
) -> tuple[int, Any]:
    sent = {"Accept": "application/json", "Content-Type": content_type, **headers}
    async with browser.http.post(browser.served.url + path, data=raw, headers=sent) as response:
        return response.status, await response.json()


@pytest.mark.parametrize(("raw", "content_type"), UNREADABLE)
async def test_an_unreadable_answer_is_a_400_that_changes_nothing(
    served: Served, browsers: tuple[Browser, Browser], raw: bytes, content_type: str
) -> None:
    alice, _ = browsers
    assert await alice.sign_in(await served.line_link(ALICE)) == 200
    request_id = await a_request(served)
    raw = raw.replace(b"ID", request_id.encode())
    for path in ("/inbox/answer", "/inbox/batch", "/inbox/selection"):
        status, body = await post_raw(
            alice, path, raw, content_type, **{"X-CSRF-Token": alice.csrf}
        )
        assert (status, body["error"]) == (400, "bad_request"), (path, body)
    assert (await served.gate.get_request(request_id)).status == "pending"


async def test_an_unreadable_form_is_a_400_before_and_after_sign_in(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    """The guard reads a form's CSRF token, and the sign-in form is public: both read it safely."""
    alice, stranger = browsers
    raw, form = b"\xff=\xff&token=x&pre=y", "application/x-www-form-urlencoded"
    status, body = await post_raw(stranger, "/inbox/sign-in", raw, form)
    assert (status, body["error"]) == (400, "bad_request")
    assert await alice.sign_in(await served.line_link(ALICE)) == 200
    request_id = await a_request(served)
    for path in ("/inbox/answer", f"/inbox/requests/{request_id}/edit", "/inbox/sign-out"):
        status, body = await post_raw(alice, path, raw, form)  # the token is in the form
        assert (status, body["error"]) == (400, "bad_request"), (path, body)
    status, body = await post_raw(
        alice, f"/inbox/requests/{request_id}/edit", raw, form, **{"X-CSRF-Token": alice.csrf}
    )
    assert (status, body["error"]) == (400, "bad_request")
    assert (await served.gate.get_request(request_id)).status == "pending"
    assert await sessions(served, "alice") == 1


@pytest_asyncio.fixture(loop_scope="module")
async def served_on(db_url: str) -> AsyncIterator[Served]:
    """The inbox on each store: some input only PostgreSQL refuses (text holding NUL)."""
    async with serving(db_url) as found:
        yield found


async def test_ids_and_filters_holding_nul_change_nothing_on_every_store(
    served_on: Served,
) -> None:
    """Each was a 500 on PostgreSQL, which cannot hold NUL in text: now what any bad id gets."""
    served = served_on
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        alice = Browser(served, http)
        assert await alice.sign_in(await served.line_link(ALICE)) == 200
        request_id = await a_request(served)
        assert (await alice.get("/inbox/requests/%00")).status == 404
        history = await alice.get("/inbox/history?agent=%00&tool=%00")
        assert history.status == 200
        csrf = {"X-CSRF-Token": alice.csrf}
        for path, body, expected in (
            ("/inbox/answer", {"request_id": "\x00", "action": "approve"}, 400),
            ("/inbox/selection", {"ids": [request_id + "\x00"], "action": "approve"}, 400),
            ("/inbox/batch", {"batch_id": "b\x00", "action": "approve_all"}, 400),
            ("/inbox/sessions/%00/revoke", {}, 404),
        ):
            status, _ = await alice.post(path, body, **csrf)
            assert status == expected, (path, status)
        assert (await served.gate.get_request(request_id)).status == "pending"
        assert await sessions(served, "alice") == 1


async def raw_status(served: Served, head: list[bytes], body: bytes = b"") -> int:
    """One request written byte for byte (aiohttp's client sends no header that is not UTF-8)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", served.server.port)
    length = b"Content-Length: %d" % len(body)
    writer.write(b"\r\n".join([*head, b"Host: x", length, b"Connection: close", b"", body]))
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return int(answer.split(b" ", 2)[1])


async def test_a_cookie_or_token_that_is_not_utf8_opens_nothing(
    served: Served, browsers: tuple[Browser, Browser]
) -> None:
    """aiohttp hands such bytes over as lone surrogates, which encode() refused: a 500 each."""
    alice, _ = browsers
    assert await alice.sign_in(await served.line_link(ALICE)) == 200
    cookie = b"Cookie: " + "; ".join(f"{c.key}={c.value}" for c in alice.http.cookie_jar).encode()
    request_id = await a_request(served)
    answer = b'{"request_id": "%s", "action": "approve"}' % request_id.encode()
    json_post = [b"POST /inbox/answer HTTP/1.1", b"Content-Type: application/json", cookie]
    assert await raw_status(served, [*json_post, b"X-CSRF-Token: \xff\xfe"], answer) == 403
    signed_out = [b"GET /inbox HTTP/1.1", b"Cookie: tapgate_session=\xff\xfe"]
    assert await raw_status(served, signed_out) == 401
    sign_in = [
        b"POST /inbox/sign-in HTTP/1.1",
        b"Content-Type: application/x-www-form-urlencoded",
        b"Cookie: tapgate_pre=\xff\xfe",
    ]
    assert await raw_status(served, sign_in, b"token=abc&pre=abc") == 403
    assert (await served.gate.get_request(request_id)).status == "pending"
    assert await sessions(served, "alice") == 1
