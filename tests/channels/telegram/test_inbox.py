"""``/inbox`` on Telegram through the real server: a one-time web-inbox link, for approvers only.

The link is opened against the same app, as a link scanner, a chat preview
and a person would: GET and HEAD (any number of them) only show the "Sign
in" page and sign nobody in; the page's POST signs its approver in, once.
A stranger (someone who started the bot but is no approver) and a group
chat get no link.
"""

from __future__ import annotations

import re

import aiohttp

from tapgate.decisions.sign_in import SignIns
from tapgate.decisions.texts import NO_INBOX, NO_INBOX_FOR_STRANGERS
from tests.channels.telegram.served import ALICE, PUBLIC_URL, Served

_LINK = re.compile(re.escape(PUBLIC_URL) + r"(/inbox/sign-in\?token=[A-Za-z0-9_-]+)")
_HIDDEN = re.compile(r'name="(\w+)" value="([^"]*)"')
_NEWCOMER = "424242424"


def browser() -> aiohttp.ClientSession:
    """One browser (or scanner): its own cookie jar, cookies kept for any host."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def link_for(served: Served, user: str) -> str:
    """``user`` sends ``/inbox``; the sign-in link's path in the answer."""
    told = await served.say(user, "/inbox")
    assert told is not None
    found = _LINK.search(told.shown)
    assert found is not None, told.shown
    assert "signs you in once" in told.shown
    return found.group(1)


async def test_inbox_answers_a_link_that_only_the_pages_post_uses_once(public: Served) -> None:
    path = await link_for(public, ALICE)
    url = str(public.client.make_url(path))
    sign_ins = SignIns(public.gate)
    for _ in range(3):  # a link scanner, a chat preview, a second preview: new clients each
        async with browser() as scanner:
            async with scanner.get(url) as page:
                assert page.status == 200
                assert "Sign in" in await page.text()
                assert "tapgate_session" not in page.cookies
            async with scanner.head(url) as head:
                assert head.status == 200
                assert "tapgate_session" not in head.cookies
    assert await sign_ins.sessions_of("alice") == []
    assert await sign_ins.link_owner(path.split("token=")[1]) == "alice"  # still unused

    async with browser() as person:
        async with person.get(url) as page:
            fields = dict(_HIDDEN.findall(await page.text()))
        post = str(public.client.make_url("/inbox/sign-in"))
        async with person.post(post, data=fields, allow_redirects=False) as done:
            assert done.status == 303
            assert done.headers["Location"] == "/inbox"
        async with person.get(str(public.client.make_url("/inbox"))) as inbox:
            assert inbox.status == 200  # the session cookie opens the inbox
        async with person.post(post, data=fields, allow_redirects=False) as again:
            assert again.status in (403, 410)  # the form posted twice opens nothing more
    [session] = await sign_ins.sessions_of("alice")
    assert session.approver == "alice"

    # the used link: a scanner or anyone else gets nothing
    async with browser() as later, later.get(url) as page:
        assert page.status == 410
        assert "used or has expired" in await page.text()
    assert len(await sign_ins.sessions_of("alice")) == 1


async def test_each_inbox_is_a_new_link_and_using_one_leaves_the_other_working(
    public: Served,
) -> None:
    first = await link_for(public, ALICE)
    second = await link_for(public, ALICE)
    assert first != second
    sign_ins = SignIns(public.gate)
    assert await sign_ins.link_owner(first.split("token=")[1]) == "alice"
    assert await sign_ins.link_owner(second.split("token=")[1]) == "alice"


async def test_a_stranger_who_started_the_bot_gets_no_link(public: Served) -> None:
    public.telegram.started.add(_NEWCOMER)
    told = await public.say(_NEWCOMER, "/inbox")
    assert told is not None
    assert told.shown == NO_INBOX_FOR_STRANGERS
    assert "/inbox/sign-in" not in told.text


async def test_inbox_in_a_group_chat_is_ignored_and_mints_nothing(public: Served) -> None:
    update = await public.telegram.type(ALICE, "/inbox", chat_type="group")
    await public.deliver(update)  # read, confirmed and passed over: only private chats act
    assert public.telegram.requests_to("sendMessage") == []
    assert public.telegram.in_chat(str(update["message"]["chat"]["id"])) == []
    # The same person's next private /inbox is answered: the group's was not just late.
    path = await link_for(public, ALICE)
    assert await SignIns(public.gate).link_owner(path.split("token=")[1]) == "alice"


async def test_inbox_without_a_public_url_says_what_the_operator_must_set(served: Served) -> None:
    told = await served.say(ALICE, "/inbox")
    assert told is not None
    assert told.shown == NO_INBOX
