"""Email through the outbox: relay refusals, threads, batches, reminders, escalation, quorum.

Against the real server and a real SMTP relay on loopback. A 4xx is tried
again by the outbox; a 5xx fails the row for good, visible like any failed
delivery. A request's reminders and its outcome reply in its thread.
"""

from __future__ import annotations

import asyncio

from tapgate.server.keys import DISPATCHER
from tests.channels.email.harness import ALICE, BOB, DAVE, Served, answer, page, reminded
from tests.fakes.served import until
from tests.tables import outbox_rows


async def _outbox(served: Served, request_id: str) -> list[tuple[str, str, int, str | None]]:
    rows = await outbox_rows(served.gate.store, request_id)
    return [(r.channel, r.status, r.attempts, r.last_error) for r in rows]


async def _retry_marked(served: Served, request_id: str, attempts: int) -> None:
    """Until the outbox has recorded attempt ``attempts`` as failed and due again."""
    for _ in range(400):
        rows = await _outbox(served, request_id)
        if rows and rows[0][2] == attempts and rows[0][3] and rows[0][1] != "sending":
            return
        await asyncio.sleep(0.005)
    raise AssertionError(await _outbox(served, request_id))


async def test_a_4xx_is_retried_through_the_outbox(served: Served) -> None:
    served.smtp.refuse("451 4.3.0 greylisted, try again later", times=2)
    request_id = await served.ask("billing")  # carol alone
    for attempt in (1, 2):
        await _retry_marked(served, request_id, attempt)
        served.clock.advance(60)  # past the outbox's backoff (5 s, then 10 s)
        served.app[DISPATCHER].wake()
    for _ in range(20):  # the manual clock moves only when told: nudge it until the retry runs
        if served.smtp.to("carol@example.test"):
            break
        served.clock.advance(5)
        served.app[DISPATCHER].wake()
        await asyncio.sleep(0.05)
    assert served.smtp.to("carol@example.test"), await _outbox(served, request_id)
    assert served.smtp.refused == 2
    assert (await served.gate.get_request(request_id)).is_pending


async def test_a_5xx_fails_the_delivery_for_good(served: Served) -> None:
    served.smtp.refuse("550 5.1.1 no such mailbox")
    request_id = await served.ask("billing")
    await until(lambda: served.smtp.refused == 1)

    for _ in range(400):  # the row is marked after the relay's answer: let that land
        if any(status == "failed" for _, status, _, _ in await _outbox(served, request_id)):
            break
        await asyncio.sleep(0.005)
    rows = await _outbox(served, request_id)
    assert rows[0][1] == "failed" and "550" in (rows[0][3] or ""), rows


async def test_a_recipient_refused_at_rcpt_fails_for_good(served: Served) -> None:
    """The envelope is opened before the message exists: a refusal there still counts."""
    served.smtp.recipients_refused["carol@example.test"] = "550 5.1.1 no such mailbox"
    request_id = await served.ask("billing")
    await until(lambda: served.smtp.refused == 1)
    for _ in range(400):
        rows = await _outbox(served, request_id)
        if rows and rows[0][1] == "failed":
            break
        await asyncio.sleep(0.005)
    assert rows[0][1] == "failed" and "550" in (rows[0][3] or ""), rows
    assert served.smtp.mails == []


async def test_an_error_after_the_relay_accepted_sends_nothing_twice(served: Served) -> None:
    """Accepted is accepted: a failed ``QUIT`` after DATA's 250 is not a failed delivery."""
    served.smtp.quit_reply = "421 4.4.2 closing the connection"
    request_id = await served.ask("billing")
    await served.mails_to("carol@example.test")
    for _ in range(400):
        rows = await _outbox(served, request_id)
        if rows and rows[0][1] != "sending" and rows[0][1] != "pending":
            break
        await asyncio.sleep(0.005)
    assert rows[0][1] == "sent" and rows[0][2] == 1, rows
    served.clock.advance(60)  # past any backoff: a retry would mail it again now
    served.app[DISPATCHER].wake()
    await asyncio.sleep(0.2)
    assert len(served.smtp.to("carol@example.test")) == 1


async def test_reminders_and_the_outcome_reply_in_the_thread(served: Served) -> None:
    request_id = await served.ask("release")  # alice, reminded every 120 s
    (first,) = await served.mails_to(ALICE)
    root = first.header("Message-ID")
    await reminded(served, ALICE, first)
    # the reminder carries its own link; either decides
    assert (await answer(await served.link(ALICE, index=1, count=2), "approve"))[0] == 200
    mails = await served.mails_to(ALICE, 3)
    outcome = mails[2]
    assert outcome.header("In-Reply-To") == root
    assert "Approved" in outcome.part("plain") and "alice" in outcome.part("plain")
    served.clock.advance(600)
    await served.beat()
    served.app[DISPATCHER].wake()
    await asyncio.sleep(0.2)  # room for a wrong extra outcome mail to arrive
    assert len(served.smtp.to(ALICE)) == 3  # one outcome however many mails were sent
    assert (await served.gate.get_request(request_id)).status == "approved"


async def test_every_mailed_approver_is_told_the_outcome(served: Served) -> None:
    await served.ask("deploy")
    assert (await answer(await served.link(ALICE), "deny", reason="freeze"))[0] == 200
    for address in (ALICE, BOB):
        mails = await served.mails_to(address, 2)
        assert "Denied" in mails[1].part("plain") and "freeze" in mails[1].part("plain")
        assert mails[1].header("In-Reply-To") == mails[0].header("Message-ID")


async def test_escalation_mails_the_added_approver(served: Served) -> None:
    request_id = await served.ask("release")
    await served.mails_to(ALICE)
    served.clock.advance(301)
    await served.beat()
    (mail,) = await served.mails_to(DAVE)
    assert mail.header("In-Reply-To") == ""  # dave's first mail starts dave's thread
    assert (await answer(await served.link(DAVE), "approve"))[0] == 200
    assert (await served.gate.get_request(request_id)).resolved_by == "dave"


async def test_quorum_needs_both_links(served: Served) -> None:
    request_id = await served.ask("migrate")  # quorum 2 of oncall
    status, _ = await answer(await served.link(ALICE), "approve")
    assert status == 200 and (await served.gate.get_request(request_id)).is_pending
    status, _ = await answer(await served.link(BOB), "approve")
    assert status == 200
    assert (await served.gate.get_request(request_id)).status == "approved"


async def test_a_batch_is_one_mail_and_one_page(served: Served) -> None:
    calls = [
        {"tool": "deploy", "arguments": {"env": "prod"}},
        {"tool": "deploy", "arguments": {"env": "staging"}},
    ]
    batch = await served.agent(
        "POST", "/v1/tool-call-batches", {"calls": calls, "session": "s1"}, status=201
    )
    (mail,) = await served.mails_to(ALICE)
    assert "2 calls" in mail.header("Subject")
    assert "prod" in mail.part("plain") and "staging" in mail.part("plain")
    link = await served.link(ALICE)
    status, text, _ = await page(link)
    assert status == 200 and "Approve all" in text
    assert (await answer(link, "approve_all"))[0] == 200
    ids = [c["id"] for c in batch["calls"] if c.get("id")]
    for request_id in ids:
        assert (await served.gate.get_request(request_id)).status == "approved"
    mails = await served.mails_to(BOB, 2)  # one outcome for the whole batch
    assert mails[1].header("In-Reply-To") == mails[0].header("Message-ID")


async def test_always_on_the_page_makes_a_grant(served: Served) -> None:
    request_id = await served.ask("bash", {"command": "make test"})
    link = await served.link(ALICE)
    _, text, _ = await page(link)
    assert "Always allow" in text and "Allow for this session" in text
    assert (await answer(link, "approve_always"))[0] == 200
    request = await served.gate.get_request(request_id)
    assert request.status == "approved" and request.scope == "always"
    grants = await served.gate.grants()
    assert len(grants) == 1


async def test_a_quorum_tells_the_outcome_only_when_it_is_met(served: Served) -> None:
    request_id = await served.ask("migrate")  # quorum 2 of oncall
    status, text = await answer(await served.link(ALICE), "approve")
    assert status == 200 and "1 of 2" in text
    served.app[DISPATCHER].wake()
    await asyncio.sleep(0.2)  # room for a wrong early outcome mail to arrive
    assert len(served.smtp.to(BOB)) == 1  # one approval is no outcome yet
    assert (await answer(await served.link(BOB), "approve"))[0] == 200
    for address in (ALICE, BOB):
        mails = await served.mails_to(address, 2)
        assert "Approved" in mails[1].part("plain")
        assert mails[1].header("In-Reply-To") == mails[0].header("Message-ID")
    assert (await served.gate.get_request(request_id)).status == "approved"


async def test_after_escalation_the_first_approver_still_answers_and_both_are_told(
    served: Served,
) -> None:
    request_id = await served.ask("release")
    first = await served.link(ALICE)
    served.clock.advance(301)  # escalated to dave (and alice reminded)
    await served.beat()
    await served.mails_to(DAVE)
    assert (await answer(first, "deny", reason="not today"))[0] == 200
    assert (await served.gate.get_request(request_id)).resolved_by == "alice"
    (_, told) = await served.mails_to(DAVE, 2)
    assert "Denied" in told.part("plain") and "not today" in told.part("plain")
    alice = await served.mails_to(ALICE, 3)  # the request, the reminder, the outcome
    assert sum("Denied" in m.part("plain") for m in alice) == 1
