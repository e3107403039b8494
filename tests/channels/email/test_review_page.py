"""The email channel end to end: a mail per approver, a link that only shows, a form that decides.

The real server, a real SMTP relay on loopback (aiosmtpd), real HTTP to the
review page. Mail scanners fetch links (GET, HEAD) any number of times: that
must decide nothing; the page's form decides once, as the link's approver.
"""

from __future__ import annotations

import asyncio

from tapgate.decisions.review_links import LINK_USED
from tests.channels.email.harness import (
    ALICE,
    BOB,
    CAROL,
    SENDER,
    Served,
    answer,
    page,
    post,
)


async def test_each_approver_gets_one_multipart_mail_naming_agent_and_tool(served: Served) -> None:
    request_id = await served.ask("deploy")
    for address in (ALICE, BOB):
        (mail,) = await served.mails_to(address)
        assert mail.header("From") == SENDER
        assert "deploy" in mail.header("Subject") and "ci" in mail.header("Subject")
        assert mail.message.get_content_type() == "multipart/alternative"
        assert "deploy" in mail.part("plain") and "deploy" in mail.part("html")
        assert mail.header("Message-ID").startswith(f"<tapgate.{request_id}.")
        assert mail.header("In-Reply-To") == ""
    assert served.smtp.to(CAROL) == []


async def test_fetching_the_link_any_number_of_times_decides_nothing(served: Served) -> None:
    request_id = await served.ask("deploy")
    link = await served.link(ALICE)
    for method in ("GET", "HEAD") * 10:
        status, _, _ = await page(link, method)
        assert status == 200
    request = await served.gate.get_request(request_id)
    assert request.is_pending
    audit = await served.gate.audit_log(request_id=request_id)
    assert [a.event for a in audit] == ["requested"]
    status, text, fields = await page(link)  # still the form: nothing was used up
    assert status == 200 and "csrf" in fields and "Approve" in text


async def test_the_form_decides_once_and_a_second_post_is_told_it_was_used(
    served: Served,
) -> None:
    request_id = await served.ask("deploy")
    link = await served.link(ALICE)
    status, _, fields = await page(link)
    status, text = await post(link, {**fields, "action": "approve"})
    assert status == 200 and "Approved" in text
    request = await served.gate.get_request(request_id)
    assert request.status == "approved" and request.resolved_by == "alice"
    status, text = await post(link, {**fields, "action": "deny"})
    assert status == 409 and LINK_USED in text.replace("&#x27;", "'")
    assert (await served.gate.get_request(request_id)).status == "approved"
    status, text, _ = await page(link)  # the used link's page says so and offers nothing
    assert status == 410 and "<form" not in text


async def test_a_late_answer_is_told_who_decided(served: Served) -> None:
    request_id = await served.ask("deploy")
    alice, bob = await served.link(ALICE), await served.link(BOB)
    _, _, bob_fields = await page(bob)  # bob opened the page before alice answered
    assert (await answer(alice, "approve"))[0] == 200
    status, text = await post(bob, {**bob_fields, "action": "deny"})
    assert status == 409 and "alice" in text
    assert (await served.gate.get_request(request_id)).status == "approved"


async def test_a_wrong_nonce_or_a_foreign_origin_decides_nothing(served: Served) -> None:
    request_id = await served.ask("deploy")
    alice, bob = await served.link(ALICE), await served.link(BOB)
    _, _, alice_fields = await page(alice)
    _, _, bob_fields = await page(bob)
    # bob's nonce on alice's link, and alice's form with no nonce: refused
    assert (await post(alice, {"csrf": bob_fields["csrf"], "action": "approve"}))[0] == 403
    assert (await post(alice, {"action": "approve"}))[0] == 403
    cross = await post(alice, {**alice_fields, "action": "approve"}, Origin="https://evil.test")
    assert cross[0] == 403
    assert (await served.gate.get_request(request_id)).is_pending
    # the link still works afterwards: refusals used nothing up
    assert (await answer(alice, "approve"))[0] == 200


async def test_another_approvers_link_cannot_decide_for_them(served: Served) -> None:
    """A link answers as the address it was sent to, whatever the form claims."""
    billing = await served.ask("billing")
    deploy = await served.ask("deploy")
    alice = await served.link(ALICE)  # alice's link to the deploy
    _, _, fields = await page(alice)
    forged = {**fields, "action": "approve", "request_id": billing, "user": "carol"}
    status, _ = await post(alice, forged)
    assert status == 200
    assert (await served.gate.get_request(billing)).is_pending  # carol's request: untouched
    decided = await served.gate.get_request(deploy)
    assert decided.status == "approved" and decided.resolved_by == "alice"


async def test_a_non_approver_link_is_refused_and_audited(served: Served) -> None:
    """A link whose approver is not (or no longer) one of the request's approvers."""
    request_id = await served.ask("billing")
    await served.link(CAROL)
    # a link minted for bob (not an approver of billing), as a stale config would leave one
    bob_link = await served.stale_link(request_id, "bob", BOB)
    status, _ = await answer(bob_link, "approve")
    assert status == 409
    assert (await served.gate.get_request(request_id)).is_pending
    audit = await served.gate.audit_log(request_id=request_id)
    assert any(a.event == "refused" for a in audit), [a.event for a in audit]


async def test_deny_takes_a_reason_from_the_page(served: Served) -> None:
    request_id = await served.ask("deploy")
    status, _ = await answer(await served.link(ALICE), "deny", reason="not on a Friday")
    assert status == 200
    request = await served.gate.get_request(request_id)
    assert request.status == "denied" and request.resolution_reason == "not on a Friday"


async def test_fifty_concurrent_posts_of_both_links_decide_exactly_once(served: Served) -> None:
    request_id = await served.ask("deploy")
    forms = []
    for address in (ALICE, BOB):
        link = await served.link(address)
        _, _, fields = await page(link)
        forms.append((link, fields))
    results = await asyncio.gather(
        *(post(link, {**f, "action": "approve"}) for _ in range(25) for link, f in forms)
    )
    assert sum(status == 200 for status, _ in results) == 1
    audit = await served.gate.audit_log(request_id=request_id)
    assert sum(a.event == "approved" for a in audit) == 1


async def test_bad_input_is_a_4xx_never_a_500(served: Served) -> None:
    await served.ask("deploy")
    link = await served.link(ALICE)
    _, _, fields = await page(link)
    base = link.rsplit("/", 1)[0]
    assert (await page(base + "/short"))[0] == 404
    assert (await page(base + "/" + "A" * 43))[0] == 404
    assert (await post(link, {**fields, "action": "rm -rf"}))[0] == 400
    assert (await post(link, {**fields, "action": "approve_all"}))[0] == 400
    assert (await post(link, {**fields, "action": "deny", "reason": "x" * 5000}))[0] == 400
    assert (await post(link, {**fields, "action": "reply"}))[0] == 400
    raw = await post(link, {}, **{"Content-Type": "text/plain"})
    assert raw[0] == 415
    assert (await answer(link, "approve"))[0] == 200  # none of that used the link


async def test_hostile_arguments_are_masked_and_escaped_in_mail_and_page(served: Served) -> None:
    secret = "ghp_0123456789abcdefghij0123456789abcdef"
    hostile = f'<script>alert(1)</script><img src=x onerror=alert(2)> "q" {secret}\x1b[2J'
    await served.ask("deploy", {"env": hostile})
    (mail,) = await served.mails_to(ALICE)
    html, text = mail.part("html"), mail.part("plain")
    _, page_html, _ = await page(await served.link(ALICE))
    for shown in (html, text, page_html):
        assert secret not in shown
        assert "\x1b" not in shown
    for shown in (html, page_html):
        assert "<script>" not in shown and "<img" not in shown
        assert "&lt;script&gt;" in shown
    assert "\n" not in mail.header("Subject") and "\x1b" not in mail.header("Subject")
