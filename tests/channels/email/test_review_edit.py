"""Edit, then approve, on the review page: the web inbox's rules, through a mailed link.

The real server and SMTP relay. The form is opened (any number of times,
deciding nothing), typed in and posted; the edited call is judged by the
policy again: refused, the form comes back with the reason and the link is
still unused; allowed, the request is approved once with the edited
arguments and the agent is told so.
"""

from __future__ import annotations

from tapgate.policy.masking import MASK
from tests.channels.email.harness import ALICE, BOB, Served, answer, page, post


def edit_of(link: str) -> str:
    return link + "/edit"


async def test_the_page_offers_an_edit_whose_form_decides_nothing(served: Served) -> None:
    request_id = await served.ask("deploy", {"env": "prod", "replicas": 3})
    link = await served.link(ALICE)
    _, text, _ = await page(link)
    assert "Edit, then approve" in text and 'href="/email/review/' in text
    for method in ("GET", "HEAD") * 5:
        status, _, _ = await page(edit_of(link), method)
        assert status == 200
    status, form, fields = await page(edit_of(link))
    assert "Approve with these arguments" in form and "prod" in form
    assert set(fields) == {"csrf"}  # the arguments are textareas, the nonce the link's
    assert (await served.gate.get_request(request_id)).is_pending
    audit = await served.gate.audit_log(request_id=request_id)
    assert [a.event for a in audit] == ["requested"]


async def test_an_edit_is_approved_once_with_the_edited_arguments(served: Served) -> None:
    request_id = await served.ask("deploy", {"env": "prod", "replicas": 3})
    link = await served.link(ALICE)
    _, _, fields = await page(edit_of(link))
    # arguments in key order: arg0 = env (text), arg1 = replicas (JSON)
    status, text = await post(edit_of(link), {**fields, "arg0": "staging", "arg1": "2"})
    assert status == 200 and "Approved" in text
    polled = await served.agent("GET", f"/v1/tool-calls/{request_id}?wait=5")
    assert polled["status"] == "approved" and polled["edited"] is True
    assert polled["arguments"] == {"env": "staging", "replicas": 2}
    assert polled["decided_by"] == "alice"
    again, text = await post(edit_of(link), {**fields, "arg0": "canary"})
    assert again == 410 and "already used" in text  # the link answered once
    decided = await served.gate.get_request(request_id)
    assert decided.edited_arguments == {"env": "staging", "replicas": 2}


async def test_an_edit_the_policy_denies_is_refused_on_the_form(served: Served) -> None:
    request_id = await served.ask("deploy", {"env": "prod"})
    link = await served.link(ALICE)
    _, _, fields = await page(edit_of(link))
    status, text = await post(edit_of(link), {**fields, "arg0": "forbidden"})
    assert status == 422
    assert "never to forbidden" in text and ">\nforbidden</textarea>" in text  # typed text kept
    assert (await served.gate.get_request(request_id)).is_pending
    audit = await served.gate.audit_log(request_id=request_id)
    assert [a.event for a in audit] == ["requested", "refused"]
    # the refusal used nothing up: the same link still answers
    assert (await answer(link, "approve"))[0] == 200
    assert (await served.gate.get_request(request_id)).status == "approved"


async def test_bad_json_and_a_changed_mask_are_shown_by_their_field(served: Served) -> None:
    secret = "ghp_0123456789abcdefghij0123456789abcdef"
    request_id = await served.ask("deploy", {"env": "prod", "replicas": 3, "token": secret})
    link = await served.link(ALICE)
    status, form, fields = await page(edit_of(link))
    assert secret not in form and MASK in form
    typed = {**fields, "arg1": "three", "arg2": f"{MASK}x"}  # replicas, token
    status, text = await post(edit_of(link), typed)
    assert status == 422
    assert 'id="arg1-error"' in text and 'id="arg2-error"' in text
    assert secret not in text
    assert (await served.gate.get_request(request_id)).is_pending
    # the mask left exactly as shown keeps the secret: the approval carries it
    status, _ = await post(edit_of(link), {**fields, "arg0": "staging"})
    assert status == 200
    decided = await served.gate.get_request(request_id)
    assert decided.edited_arguments == {"env": "staging", "replicas": 3, "token": secret}


async def test_what_cannot_be_edited_offers_no_edit(served: Served) -> None:
    await served.ask("migrate", {"to": "v2"})  # a quorum of two: approved as asked only
    link = await served.link(ALICE)
    _, text, _ = await page(link)
    assert "Edit, then approve" not in text
    status, text, _ = await page(edit_of(link))
    assert status == 409 and "several approvals" in text
    await served.agent(
        "POST",
        "/v1/tool-call-batches",
        {"calls": [{"tool": "deploy", "arguments": {"env": e}} for e in ("a", "b")]},
        status=201,
    )
    batch = await served.link(BOB, count=2)
    assert (await page(edit_of(batch)))[0] == 404


async def test_a_forged_edit_decides_nothing_and_writes_nothing(served: Served) -> None:
    request_id = await served.ask("deploy", {"env": "prod"})
    link = await served.link(ALICE)
    _, _, fields = await page(edit_of(link))
    assert (await post(edit_of(link), {"arg0": "staging", "csrf": "nope" * 6}))[0] == 403
    cross = await post(edit_of(link), {**fields, "arg0": "x"}, Origin="https://evil.test")
    assert cross[0] == 403
    assert (await post(edit_of(link), {**fields}, **{"Content-Type": "text/plain"}))[0] == 415
    audit = await served.gate.audit_log(request_id=request_id)
    assert [a.event for a in audit] == ["requested"]
    assert (await served.gate.get_request(request_id)).is_pending
