"""A decision made on another channel reaches the mailed approvers: the threaded outcome mail.

alice and bob are on LINE and email. Each gets the request by both; alice
taps Approve on LINE (a signed postback to the real webhook); every mailed
approver, not only alice, gets one outcome mail in the request's thread,
and the review links stop answering.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from tests.channels.email.harness import ALICE, BOB, LINE_ALICE, Served, page, serving
from tests.fakes import FakeLine
from tests.fakes.receivers import line_webhook
from tests.fakes.served import LINE_SECRET, LINE_TOKEN, until
from tests.fakes.taps import signed_line_tap


@pytest.fixture
async def served(migrated_sqlite_url: str) -> AsyncIterator[Served]:
    async with (
        FakeLine(access_token=LINE_TOKEN) as line,
        serving(migrated_sqlite_url, line=line) as found,
    ):
        yield found


async def test_a_line_tap_sends_every_mailed_approver_the_threaded_outcome(
    served: Served,
) -> None:
    assert served.line is not None
    request_id = await served.ask("deploy")
    firsts = {address: (await served.mails_to(address))[0] for address in (ALICE, BOB)}
    await until(lambda: len(served.line.pushes) >= 2 if served.line else False)
    links = {address: await served.link(address) for address in (ALICE, BOB)}

    body, headers = signed_line_tap(LINE_SECRET, LINE_ALICE, request_id)
    await served.post_webhook("/webhooks/line", body, headers)
    await line_webhook(served.app).settled()
    decided = await served.gate.get_request(request_id)
    assert decided.status == "approved" and decided.resolved_by == "alice"

    for address in (ALICE, BOB):
        mails = await served.mails_to(address, 2)
        outcome = mails[1]
        root = firsts[address].header("Message-ID")
        assert outcome.header("In-Reply-To") == root and outcome.header("References") == root
        assert outcome.header("Subject") == "Re: " + firsts[address].header("Subject")
        assert "Approved" in outcome.part("plain") and "alice" in outcome.part("plain")
        status, text, _ = await page(links[address])  # the mailed link answers no more
        assert status == 410 and "<form" not in text
    await asyncio.sleep(0.2)  # room for a wrong second outcome mail
    assert len(served.smtp.to(ALICE)) == len(served.smtp.to(BOB)) == 2
