"""A batch's reminder reaches email: one mail for the batch, in the batch's thread, that decides.

The batch's calls are ``release`` (alice, reminded every 120 s); the manual
clock moves past that and the heartbeat beats once. alice gets one reminder
for the whole batch (not one per call), replying to the batch's first mail,
with its own link to the batch's page; answering it sends the one outcome.
"""

from __future__ import annotations

import asyncio

from tests.channels.email.harness import ALICE, Served, answer, page, reminded
from tests.tables import outbox_rows

CALLS = [
    {"tool": "release", "arguments": {"env": "prod"}},
    {"tool": "release", "arguments": {"env": "staging"}},
]


async def delivered(served: Served, ids: list[str], *, decided: bool = False) -> None:
    """Until every outbox row of ``ids`` was sent (and, ``decided``, updated with the outcome)."""
    for _ in range(1000):
        rows = [row for rid in ids for row in await outbox_rows(served.gate.store, rid)]
        if all(r.status == "sent" and (r.updated_status or not decided) for r in rows):
            return
        await asyncio.sleep(0.005)
    raise AssertionError(rows)


async def test_a_batch_reminder_is_one_mail_in_the_batch_thread_and_its_link_decides(
    served: Served,
) -> None:
    batch = await served.agent("POST", "/v1/tool-call-batches", {"calls": CALLS}, status=201)
    ids = [c["id"] for c in batch["calls"] if c.get("id")]
    assert len(ids) == 2
    (first,) = await served.mails_to(ALICE)
    root = first.header("Message-ID")
    assert "2 calls" in first.header("Subject")

    text = (await reminded(served, ALICE, first)).part("plain")  # replying to the batch's mail
    assert "prod" in text and "staging" in text  # the batch's calls, not one of them
    await delivered(served, ids)  # both calls' reminders went out: one mail for the two
    assert len(served.smtp.to(ALICE)) == 2

    link = await served.link(ALICE, index=1, count=2)
    status, shown, _ = await page(link)
    assert status == 200 and "Approve all" in shown
    assert (await answer(link, "approve_all"))[0] == 200
    for request_id in ids:
        assert (await served.gate.get_request(request_id)).status == "approved"
    outcome = (await served.mails_to(ALICE, 3))[2]
    assert outcome.header("In-Reply-To") == root and "Approved" in outcome.part("plain")
    await delivered(served, ids, decided=True)  # every row told of the outcome: one mail still
    assert len(served.smtp.to(ALICE)) == 3
