"""Edit, then approve in the web inbox: the form, its refusals, the decision.

Plain HTTP, as a browser without script: the card's Edit link, the form
prefilled by ``core.edits`` (a secret shown masked, never in clear), a POST
judged by the policy again, and the agent's long-poll receiving the edited
call with ``edited: true``.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.fakes.served import ALICE, CAROL
from tests.web.harness import Browser, Served

pytestmark = pytest.mark.asyncio(loop_scope="module")

SECRET = "sk-live-0123456789abcdefghijklmnop"
DEPLOY: dict[str, Any] = {"env": "staging", "replicas": 2, "api_token": SECRET, "note": "<b>hi"}


@pytest_asyncio.fixture(loop_scope="module")
async def people(served: Served) -> AsyncIterator[tuple[Browser, Browser]]:
    """Alice (an approver of deploys) and Carol (an approver, but not of deploys), signed in."""
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as one,
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as two,
    ):
        alice, carol = Browser(served, one), Browser(served, two)
        assert await alice.sign_in(await served.line_link(ALICE)) == 200
        assert await carol.sign_in(await served.line_link(CAROL)) == 200
        yield alice, carol


async def ask(served: Served, arguments: dict[str, Any]) -> str:
    body = {"tool": "deploy", "arguments": arguments, "session": "s1"}
    request_id: str = (await served.agent("POST", "/v1/tool-calls", body, status=201))["id"]
    return request_id


async def get(browser: Browser, path: str) -> tuple[int, str]:
    async with browser.http.get(browser.served.url + path) as response:
        return response.status, await response.text()


async def submit(
    browser: Browser, request_id: str, csrf: str | None = None, **fields: str
) -> tuple[int, str, str | None]:
    """POST the edit form as a browser without script: status, page, redirect target."""
    data = {"csrf": browser.csrf if csrf is None else csrf, **fields}
    url = f"{browser.served.url}/inbox/requests/{request_id}/edit"
    async with browser.http.post(url, data=data, allow_redirects=False) as response:
        return response.status, await response.text(), response.headers.get("Location")


def prefill(page: str) -> dict[str, str]:
    """The form's textareas by name, unescaped, as a browser would submit them untouched."""
    found = re.findall(r'<textarea id="\w+" name="(\w+)"[^>]*>\n(.*?)</textarea>', page, re.S)
    return {name: html.unescape(text) for name, text in found}


async def test_an_edit_reaches_the_agent_with_the_edited_arguments(
    served: Served, people: tuple[Browser, Browser]
) -> None:
    alice, _ = people
    request_id = await ask(served, DEPLOY)
    _, inbox = await get(alice, "/inbox")
    assert f'href="/inbox/requests/{request_id}/edit"' in inbox
    status, page = await get(alice, f"/inbox/requests/{request_id}/edit")
    assert status == 200
    assert SECRET not in page and "<b>hi" not in page and "&lt;b&gt;hi" in page
    fields = prefill(page)  # sorted keys: api_token, env, note, replicas
    assert fields["arg1"] == "staging" and fields["arg3"] == "2" and SECRET not in fields["arg0"]
    poll = asyncio.create_task(served.agent("GET", f"/v1/tool-calls/{request_id}?wait=30"))
    fields.update(arg1="qa-east", arg3="5")
    status, _, location = await submit(alice, request_id, **fields)
    assert (status, location) == (303, "/inbox")
    answer = await poll
    assert answer["status"] == "approved" and answer["edited"] is True
    assert answer["arguments"] == {**DEPLOY, "env": "qa-east", "replicas": 5}  # secret kept
    _, history = await get(alice, "/inbox/history")
    assert "· edited</td>" in history
    _, trail = await get(alice, f"/inbox/requests/{request_id}")
    assert 'id="edited"' in trail and "qa-east" in trail and SECRET not in trail


async def test_a_refused_edit_shows_the_form_again_and_decides_nothing(
    served: Served, people: tuple[Browser, Browser]
) -> None:
    alice, _ = people
    request_id = await ask(served, DEPLOY)
    _, page = await get(alice, f"/inbox/requests/{request_id}/edit")
    fields = prefill(page)
    for change, reason in (
        ({"arg1": "forbidden"}, "never to forbidden"),  # the policy denies the edited call
        ({"arg3": "two"}, "Not valid JSON."),
        ({"arg3": '"2"'}, "Must stay JSON of the same type"),
    ):
        status, shown, _ = await submit(alice, request_id, **{**fields, **change})
        assert status == 422 and html.escape(reason, quote=True) in shown
        assert prefill(shown) == {**fields, **change}  # what was typed is kept
        assert (await served.gate.get_request(request_id)).is_pending


@pytest.mark.parametrize(
    ("field", "typed"),
    [
        ("arg2", "1e999"),  # json.loads reads infinity; the stored text cannot hold it
        ("arg2", "[" * 100_000 + "]" * 100_000),  # json.loads: a RecursionError
        ("arg1", '{"a": "\\ud800"}'),  # a lone surrogate: no store can encode it
        ("arg1", '{"\\udc00": "b"}'),
    ],
)
async def test_json_the_store_cannot_hold_is_refused_in_the_form(
    served: Served, people: tuple[Browser, Browser], field: str, typed: str
) -> None:
    """Each was a 500 (the store refused what the edit let through): the form says why now."""
    alice, _ = people
    request_id = await ask(served, {"env": "staging", "obj": {"a": "b"}, "replicas": 2})
    _, page = await get(alice, f"/inbox/requests/{request_id}/edit")
    fields = prefill(page)  # sorted keys: env, obj, replicas
    assert fields["arg1"].startswith("{") and fields["arg2"] == "2"
    status, shown, _ = await submit(alice, request_id, **{**fields, field: typed})
    assert status == 422 and "Not valid JSON." in shown
    assert (await served.gate.get_request(request_id)).is_pending


async def test_no_csrf_and_strangers_are_refused(
    served: Served, people: tuple[Browser, Browser]
) -> None:
    alice, carol = people
    request_id = await ask(served, DEPLOY)
    for csrf in ("", "wrong"):
        status, page, _ = await submit(alice, request_id, csrf=csrf, arg1="qa")
        assert status == 403 and "CSRF" in page
    status, _ = await get(carol, f"/inbox/requests/{request_id}/edit")
    assert status == 403
    status, _, _ = await submit(carol, request_id, arg1="qa")
    assert status == 403
    assert (await served.gate.get_request(request_id)).is_pending
    refusals = [a for a in await served.gate.audit_log(request_id=request_id) if a.actor == "carol"]
    assert refusals  # a stranger's attempt is audited


async def test_decided_calls_and_calls_without_arguments_offer_no_edit(
    served: Served, people: tuple[Browser, Browser]
) -> None:
    alice, _ = people
    request_id = await ask(served, {"env": "staging"})
    status, _, location = await submit(alice, request_id, arg0="qa")
    assert (status, location) == (303, "/inbox")
    status, page = await get(alice, f"/inbox/requests/{request_id}/edit")
    assert status == 409 and "Already approved by alice" in page
    bare = await ask(served, {})
    _, inbox = await get(alice, "/inbox")
    assert f'id="r-{bare}"' in inbox and f"/inbox/requests/{bare}/edit" not in inbox
    status, _ = await get(alice, f"/inbox/requests/{bare}/edit")
    assert status == 409
