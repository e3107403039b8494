"""Sign-in links and web sessions, on SQLite and PostgreSQL, through core.sign_in.

A link is used once even when two browsers race with it; only digests are
stored; sessions end when revoked or expired; an approver's queue is read in
SQL (``approver`` filter, offset, count).
"""

from __future__ import annotations

import asyncio
import hashlib

from sqlalchemy import Connection, select

from tapgate.decisions.sign_in import LINK_TTL, SESSION_TTL, SignIns
from tapgate.gate.clock import ManualClock
from tapgate.gate.directory import Approver, Directory
from tapgate.gate.gate import Gate
from tapgate.policy.engine import Policy
from tapgate.policy.rules import PolicySpec
from tapgate.store import Store
from tapgate.store.schema import web_sessions, web_sign_ins
from tests.factories import make_request


def _sign_ins(store: Store, clock: ManualClock) -> SignIns:
    people = Directory([Approver(name="alice"), Approver(name="bob")])
    gate = Gate(store=store, policy=Policy(PolicySpec()), directory=people, clock=clock)
    return SignIns(gate)


async def test_a_link_opens_one_session_even_when_raced(store: Store, clock: ManualClock) -> None:
    sign_ins = _sign_ins(store, clock)
    token = await sign_ins.link("alice", via="line")
    assert await sign_ins.link_owner(token) == "alice"
    opened = await asyncio.gather(*(sign_ins.exchange(token) for _ in range(8)))
    winners = [o for o in opened if o is not None]
    assert len(winners) == 1
    assert winners[0].session.approver == "alice" and winners[0].session.via == "line"
    assert await sign_ins.link_owner(token) is None
    assert await sign_ins.session(winners[0].secret) == winners[0].session


async def test_only_digests_are_stored(store: Store, clock: ManualClock) -> None:
    sign_ins = _sign_ins(store, clock)
    token = await sign_ins.link("alice", via="slack")
    opened = await sign_ins.exchange(token)
    assert opened is not None

    def rows(conn: Connection) -> list[str]:
        links = [str(r[0]) for r in conn.execute(select(web_sign_ins.c.token_hash))]
        cookies = [str(r[0]) for r in conn.execute(select(web_sessions.c.secret_hash))]
        return links + cookies

    stored = await store.run(rows)
    assert token not in stored and opened.secret not in stored
    assert hashlib.sha256(token.encode()).hexdigest() in stored


async def test_links_expire_and_sessions_end(store: Store, clock: ManualClock) -> None:
    sign_ins = _sign_ins(store, clock)
    late = await sign_ins.link("alice", via="line")
    clock.advance(LINK_TTL.total_seconds() + 1)
    assert await sign_ins.exchange(late) is None
    opened = await sign_ins.exchange(await sign_ins.link("alice", via="line"))
    assert opened is not None
    clock.advance(SESSION_TTL.total_seconds() + 1)
    assert await sign_ins.session(opened.secret) is None
    assert await sign_ins.sessions_of("alice") == []


async def test_sessions_are_listed_and_revoked_by_their_approver_only(
    store: Store, clock: ManualClock
) -> None:
    sign_ins = _sign_ins(store, clock)
    one = await sign_ins.exchange(await sign_ins.link("alice", via="line"))
    two = await sign_ins.exchange(await sign_ins.link("alice", via="slack"))
    assert one is not None and two is not None
    assert {s.id for s in await sign_ins.sessions_of("alice")} == {one.session.id, two.session.id}
    assert not await sign_ins.revoke(one.session.id, approver="bob")
    assert await sign_ins.session(one.secret) is not None
    assert await sign_ins.revoke(one.session.id, approver="alice")
    assert not await sign_ins.revoke(one.session.id, approver="alice")  # once
    assert await sign_ins.session(one.secret) is None
    assert await sign_ins.session(two.secret) is not None
    assert await sign_ins.session("made-up") is None
    clock.advance(SESSION_TTL.total_seconds() + 2 * 86400)
    assert await sign_ins.forget() == 4  # two links and two sessions, long over
    assert await sign_ins.sessions_of("alice") == []


async def test_only_approvers_get_links(store: Store, clock: ManualClock) -> None:
    sign_ins = _sign_ins(store, clock)
    try:
        await sign_ins.link("mallory", via="line")
    except ValueError:
        pass
    else:
        raise AssertionError("a link for someone who is not an approver")


async def test_an_approvers_queue_is_read_in_sql(store: Store, clock: ManualClock) -> None:
    for n in range(5):
        who = ("alice", "bob") if n % 2 == 0 else ("bob",)
        request = make_request(clock.now(), approvers=who, session=f"s{n}")
        await store.create_request(request, [], clock.now())
        clock.advance(1)
    alices = await store.list_requests(status="pending", approver="alice")
    assert len(alices) == 3 and all("alice" in r.approvers for r in alices)
    assert [r.session for r in alices] == ["s4", "s2", "s0"]  # newest first
    page = await store.list_requests(status="pending", approver="bob", limit=2, offset=2)
    assert [r.session for r in page] == ["s2", "s1"]
    assert await store.count_requests(status="pending", approver="bob") == 5
    assert await store.count_requests(status="pending", approver="al") == 0  # whole names only
