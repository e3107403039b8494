"""Hostile agent text on the review pages and in a batch's mails: masked, escaped, inert.

The shared property test (``tests/channels/slack/test_slack_escaping.py``)
sends a request's mail and its outcome through the fake relay. This one
feeds the same generated agent text and secrets through what that test does
not reach: the review page of a request, of a question and of a batch (with
the "Open the web inbox" form), the edit form (with a refusal shown), a
refusal page, and a batch's mail and outcome mail. Each must hold only the
markup tapgate writes, forms and links that lead only to the page's own
link, no secret, and the agent's markup shown as the characters it is.
"""

from __future__ import annotations

import email
from datetime import UTC, datetime, timedelta
from email import policy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapgate.channels.email.edit import edit_page
from tapgate.channels.email.message import ask_html, ask_text, build, outcome_parts
from tapgate.channels.email.page import batch_page, message_page, request_page
from tapgate.channels.email.render import batch_calls_html, batch_calls_text, batch_subject
from tapgate.channels.email.review import edit_path, review_path, sign_in_path
from tapgate.decisions.edits import WHOLE
from tapgate.decisions.review_links import OpenLink
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.presentation import present
from tapgate.gate.models import CONTACT_TOOL
from tapgate.store.review_links import StoredLink
from tests.channels.email.inert import assert_mail_inert, assert_page_inert
from tests.channels.slack.test_slack_escaping import MARKUP, SHAPES, agent_text, secret_body
from tests.factories import make_request
from tests.fakes.smtp import Mail

NOW = datetime(2025, 3, 4, 12, 0, tzinfo=UTC)
TOKEN = "T" * 43
CSRF = "c" * 22


def _link(approver: str) -> OpenLink:
    stored = StoredLink(
        subject="r1",
        batch=False,
        approver=approver,
        address="alice@example.test",
        csrf=CSRF,
        expires_at=NOW + timedelta(minutes=10),
        used_at=None,
    )
    return OpenLink(link=stored, state="open")


def _mail(subject: str, text: str, html_body: str) -> Mail:
    """The mail as the relay would take it: built, then read back from its bytes."""
    built = build(
        sender="tapgate@gate.example.test",
        to="alice@example.test",
        subject=subject,
        message_id="<m@gate.example.test>",
        thread_root=None,
        text=text,
        html_body=html_body,
        now=NOW,
    )
    raw = built.as_bytes(policy=policy.SMTP)
    parsed = email.message_from_bytes(raw, policy=policy.default)
    return Mail(mail_from="tapgate@gate.example.test", rcpt_tos=("a@x",), message=parsed, raw=raw)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tool=st.one_of(st.just("Bash"), agent_text),
    agent=agent_text,
    session=agent_text,
    reason=agent_text,
    note=agent_text,
    shape=st.sampled_from(SHAPES),
    body=secret_body,
)
def test_review_pages_and_batch_mails_are_inert_and_hold_no_secret(
    tool: str, agent: str, session: str, reason: str, note: str, shape: str, body: str
) -> None:
    secret = shape.format(*[body] * shape.count("{}"))
    leak = f"Zq{body}"
    arguments = {"command": f"{note} {secret}", "note": note, "markup": MARKUP}
    request = make_request(
        NOW, tool=tool, agent=agent, session=session, reason=reason, arguments=arguments
    )
    view = present(request, now=NOW)
    shown = request_page(
        view,
        approver=agent,
        csrf=CSRF,
        action=review_path(TOKEN),
        edit=edit_path(TOKEN),
        sign_in=sign_in_path(TOKEN),
    )
    assert_page_inert(shown, secret=leak, shown=[MARKUP, f"Open the web inbox as {agent}"])

    question = make_request(
        NOW, tool=CONTACT_TOOL, agent=agent, arguments={"message": note, "subject": reason}
    )
    asked = present(question, now=NOW)
    answer = request_page(asked, approver=agent, csrf=CSRF, action=review_path(TOKEN))
    assert_page_inert(answer, secret=leak, shown=[])

    form = edit_page(request, _link(agent), TOKEN, {}, {WHOLE: f"{reason} {MARKUP}"})
    assert_page_inert(form, secret=leak, shown=[MARKUP])
    assert_page_inert(message_page(MARKUP, detail=reason), secret=leak, shown=[MARKUP])

    calls = [
        make_request(NOW, batch_id="b1", tool=tool, agent=agent, arguments={**arguments, "n": n})
        for n in range(3)
    ]
    batch = present_batch(calls, now=NOW)
    page = batch_page(
        batch,
        approver=agent,
        csrf=CSRF,
        action=review_path(TOKEN),
        open_calls=[c.id for c in calls],
        sign_in=sign_in_path(TOKEN),
    )
    assert_page_inert(page, secret=leak, shown=[MARKUP])

    url = f"https://gate.example.test{review_path(TOKEN)}"
    lead = f"{agent} asks to run 3 calls together."
    text = ask_text(lead, url, batch_calls_text(batch))
    mailed = _mail(batch_subject(batch), text, ask_html(lead, url, batch_calls_html(batch)))
    assert_mail_inert(mailed, secret=leak, shown=[MARKUP])
    lines = [f"{c.view.tool} [{c.view.short_id}]: denied by {agent}: {reason}" for c in batch.calls]
    told = _mail(batch_subject(batch), *outcome_parts(lines))
    assert_mail_inert(told, secret=leak, shown=[])
