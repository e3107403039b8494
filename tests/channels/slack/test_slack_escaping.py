"""Agent text reaches Slack inert, and secrets reach no platform: checked on what the fakes get.

A tool named ``show_<!channel>_*bold*`` once arrived with ``<`` escaped
but ``*`` live in the message's fallback ``text`` and in updates. Here the
real notifiers post and update through the fake Slack and LINE APIs and the
fake SMTP relay, and the checks read what those servers received:

- outside code, Slack ``mrkdwn`` has no ``<``, ``>``, bare ``&`` and no
  formatting marker (``*``, ``_``, ``~``, backtick) but the bold labels
  tapgate writes itself; ``plain_text`` and code keep the markers, which
  Slack does not format there, and escape only ``&<>``;
- a secret in one of the shapes the mask knows never appears in any payload;
- a mail (the request, then its outcome) is inert HTML and text within
  SMTP's limits (:mod:`tests.channels.email.inert`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tapgate.channels.email.notifier import EmailNotifier
from tapgate.channels.email.settings import EmailConfig
from tapgate.channels.line.notifier import LineNotifier
from tapgate.channels.slack.blocks import escape, render_slack, render_slack_resolved
from tapgate.channels.slack.notifier import SlackNotifier
from tapgate.decisions.remember import Offer
from tapgate.decisions.review_links import ReviewLinks
from tapgate.delivery.presentation import present
from tapgate.delivery.retry import RetryPolicy
from tapgate.gate.gate import Gate
from tapgate.gate.models import CONTACT_TOOL, Delivery, Request, args_digest
from tapgate.policy import Policy, PolicySpec
from tapgate.store import Store
from tests.channels.email.inert import assert_mail_inert
from tests.delivery.test_render import walk
from tests.factories import make_request
from tests.fakes import FakeLine, FakeSlack
from tests.fakes.smtp import FakeSmtp

SLACK_TOKEN = "xoxb-escaping-test-token"
LINE_TOKEN = "escaping-line-token"
NOW = datetime(2025, 3, 4, 12, 0, tzinfo=UTC)
SLACK_TO = Delivery(approver="alice", channel="slack", address="U0ALICE")
LINE_TO = Delivery(approver="alice", channel="line", address="U" + "a" * 32)
EMAIL_TO = Delivery(approver="alice", channel="email", address="alice@example.test")
MARKUP = "<script>alert(1)</script><img src=x onerror=alert(2)>"
HOSTILE_TOOL = "show_<!channel>_*bold*"
MARKERS = re.compile(r"[*_~`]")
_CODE_BLOCK = re.compile(r"```\n.*?\n```", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_OUR_LABEL = re.compile(r"(?m)^\*[A-Z][^*\n]*\*")  # "*Agent*", "*Command*": tapgate's own bold
_BARE_AMPERSAND = re.compile(r"&(?!amp;|lt;|gt;)")


def assert_entities_escaped(text: str) -> None:
    assert "<" not in text
    assert ">" not in text
    assert not _BARE_AMPERSAND.search(text), text


def outside_code(mrkdwn: str) -> str:
    """What Slack formats in ``mrkdwn``: code blocks, inline code and our labels removed."""
    return _OUR_LABEL.sub("", _INLINE_CODE.sub("", _CODE_BLOCK.sub("", mrkdwn)))


def assert_inert(text: str | None, blocks: list[Any] | None) -> None:
    """Slack would show every character of ``text`` and ``blocks`` as typed: no markup."""
    assert text is not None and blocks is not None
    assert_entities_escaped(text)
    assert not MARKERS.search(text), text  # the fallback is mrkdwn, and all of it is agent data
    for node in walk(blocks):
        if node.get("type") == "plain_text":
            assert_entities_escaped(node["text"])
        elif node.get("type") == "mrkdwn":
            assert_entities_escaped(node["text"])
            assert not MARKERS.search(outside_code(node["text"])), node["text"]


# -- the finding, rendered and delivered ----------------------------------------------


def test_escape_knows_where_the_text_lands() -> None:
    text = "a_b *c* ~d~ `e` <!here> & f"
    assert (
        escape(text) == "a\u02cdb \u2217c\u2217 \u223cd\u223c \u02cbe\u02cb &lt;!here&gt; &amp; f"
    )
    kept = "a_b *c* ~d~ `e` &lt;!here&gt; &amp; f"
    assert escape(text, place="code") == escape(text, place="plain_text") == kept


def test_a_hostile_tool_name_is_inert_in_the_fallback_text_of_post_and_update() -> None:
    view = present(make_request(NOW, tool=HOSTILE_TOOL))
    posted = render_slack(view)
    updated = render_slack_resolved(view, status="approved", by="alice", at=NOW)
    for message in (posted, updated):
        assert "show\u02cd&lt;!channel&gt;\u02cd\u2217bold\u2217" in message["text"]
        assert "*" not in message["text"]
        assert_inert(message["text"], message["blocks"])
        header = message["blocks"][0]["text"]
        assert header["type"] == "plain_text"  # not formatted, so shown exactly as named
        assert header["text"].endswith("show_&lt;!channel&gt;_*bold*")


def test_what_the_remember_buttons_cover_is_escaped_like_all_agent_text() -> None:
    """The covers line names argument values (``env=<!channel>``), and it is what an
    "Always allow" grant lets through, so it must read exactly as the value is:
    Slack decodes ``&gt;`` in text objects, and an unescaped value ``a&gt;b``
    would read ``a>b`` (Block Kit: escape ``&``, ``<``, ``>`` in text)."""
    covers = "deploy with env=<!channel> a&gt;b"
    offer = Offer(session=True, always=True, always_ttl=86_400.0, covers=covers)
    request = make_request(NOW, tool="deploy", session="s-1", grantable=True)
    posted = render_slack(present(request, offer=offer))
    assert_inert(posted["text"], posted["blocks"])
    shown = json.dumps(posted["blocks"])
    assert "Always: deploy with env=&lt;!channel&gt; a&amp;gt;b, 1 day" in shown


def test_a_hostile_question_subject_is_inert_in_the_fallback_text() -> None:
    arguments = {"message": "*now* _please_", "subject": "~urgent~ `x` <!here>"}
    request = make_request(NOW, tool=CONTACT_TOOL, arguments=arguments, agent="a_*b*")
    view = present(request)
    answered = render_slack_resolved(view, status="approved", by="bob", at=NOW, reason="*ok*")
    for message in (render_slack(view), answered):
        assert_inert(message["text"], message["blocks"])
    assert "\u2217now\u2217 \u02cdplease\u02cd" in render_slack(view)["text"]


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(bot_token=SLACK_TOKEN) as fake:
        yield fake


@pytest.fixture
async def line() -> AsyncIterator[FakeLine]:
    async with FakeLine(access_token=LINE_TOKEN) as fake:
        yield fake


@pytest.fixture
async def mailer(migrated_sqlite_url: str) -> AsyncIterator[tuple[EmailNotifier, FakeSmtp]]:
    """The email notifier on a real store (its links) and the fake relay it sends to."""
    store = await Store.open(migrated_sqlite_url)
    gate = Gate(store=store, policy=Policy(PolicySpec()))
    async with FakeSmtp() as smtp:
        settings = EmailConfig.model_validate(
            {
                "smtp_host": "127.0.0.1",
                "smtp_port": smtp.port,
                "security": "none",
                "from": "tapgate@gate.example.test",
            }
        )
        links = ReviewLinks(gate, channel="email")
        yield EmailNotifier(settings, public_url="https://gate.example.test", links=links), smtp
    await store.close()


def notifiers(slack: FakeSlack, line: FakeLine) -> tuple[SlackNotifier, LineNotifier]:
    retry = RetryPolicy(attempts=1)
    return (
        SlackNotifier(SLACK_TOKEN, api_base_url=slack.url, timeout=5, retry=retry),
        LineNotifier(LINE_TOKEN, api_base_url=line.url, timeout=5, retry=retry),
    )


def decided(request: Request, reason: str | None) -> Request:
    return replace(
        request,
        status="approved",
        resolved_by="alice",
        resolved_at=NOW + timedelta(minutes=1),
        resolution_reason=reason,
    )


async def test_the_fake_slack_api_receives_the_hostile_tool_name_inert(
    slack: FakeSlack, line: FakeLine
) -> None:
    slack_notifier, line_notifier = notifiers(slack, line)
    await line_notifier.close()  # only Slack here
    request = make_request(NOW, tool=HOSTILE_TOOL, agent="*ci*", session="_s_")
    receipt = await slack_notifier.send(request, SLACK_TO, key=str(uuid.uuid4()))
    await slack_notifier.update(decided(request, "~fine~"), receipt)

    [message] = slack.messages.values()
    assert len(message.versions) == 2
    for version in message.versions:  # the post, then the update
        assert_inert(version.text, version.blocks)
        assert "\u2217bold\u2217" in (version.text or "")


# -- the property: generated agent text and secrets, through both fake platforms ---------

# Agent text is built from markup and a few letters; secret bodies start with "Zq",
# which agent text never contains, so finding a body can only mean a leak.
_AGENT_ALPHABET = "abc_*~`<>&!@#|:./- \n"
agent_text = st.text(alphabet=_AGENT_ALPHABET, min_size=1, max_size=40)
secret_body = st.text(
    alphabet="ABCDEFGHJKLMNPRSTUVWXYabcdefghijkmnopr0123456789", min_size=12, max_size=30
)
SHAPES = (
    "mysql -u root -pZq{}",
    "mysqldump -pZq{} db",
    "DB_PASS=Zq{}",
    "SMTP_PWD=Zq{}",
    "glpat-Zq{}{}",
    "npm_Zq{}{}{}",
    "https://hooks.slack.com/services/T01/B02/Zq{}",
    "SG.Zq{}{}.Zq{}{}{}",
    "sshpass -p Zq{} ssh -p 22 h",
    "redis-cli -a Zq{} ping",
    "curl -u bob:Zq{} https://x.example",
    "https://bob:Zq{}@db.example/x",
    "--password=Zq{}",
    "PGPASSWORD=Zq{} psql -h db",
    "Authorization: Bearer Zq{}",
    "sk_live_Zq{}",
    "AIzaZq{}{}{}",
    "hf_Zq{}{}{}",
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tool=st.one_of(st.just("Bash"), agent_text),
    agent=agent_text,
    session=agent_text,
    reason=agent_text,
    before=agent_text,
    after=agent_text,
    note=agent_text,
    shape=st.sampled_from(SHAPES),
    body=secret_body,
)
async def test_what_the_platforms_receive_is_inert_and_holds_no_secret(
    slack: FakeSlack,
    line: FakeLine,
    mailer: tuple[EmailNotifier, FakeSmtp],
    tool: str,
    agent: str,
    session: str,
    reason: str,
    before: str,
    after: str,
    note: str,
    shape: str,
    body: str,
) -> None:
    secret = shape.format(*[body] * shape.count("{}"))
    arguments = {
        "command": f"{before} {secret} {after}",
        "note": note,
        "also": f"see {secret}",
        "markup": MARKUP,
    }
    request = make_request(
        NOW,
        tool=tool,
        agent=agent,
        session=session,
        reason=reason,
        arguments=arguments,
    )
    request = replace(request, args_digest=args_digest(arguments))
    slack_notifier, line_notifier = notifiers(slack, line)
    slack_seen, line_seen = len(slack.requests), len(line.requests)

    try:
        receipt = await slack_notifier.send(request, SLACK_TO, key=str(uuid.uuid4()))
        await slack_notifier.update(decided(request, f"{reason} {secret}"), receipt)
        await line_notifier.send(request, LINE_TO, key=str(uuid.uuid4()))
    finally:
        await line_notifier.close()
    email_notifier, smtp = mailer
    mailed = len(smtp.mails)
    mail_receipt = await email_notifier.send(request, EMAIL_TO, key=str(uuid.uuid4()))
    await email_notifier.update(decided(request, f"{reason} {secret}"), mail_receipt)
    mails = smtp.mails[mailed:]
    assert len(mails) == 2  # the request, then its outcome in the thread
    assert_mail_inert(mails[0], secret=f"Zq{body}", shown=[MARKUP])
    assert_mail_inert(mails[1], secret=f"Zq{body}", shown=[])

    message = slack.messages[(receipt.ref["channel"], receipt.ref["ts"])]
    for version in message.versions:
        assert_inert(version.text, version.blocks)
    received = slack.requests[slack_seen:] + line.requests[line_seen:]
    assert received
    for recorded in received:
        assert f"Zq{body}" not in recorded.raw_body.decode("utf-8", "replace")
        assert f"Zq{body}" not in json.dumps(recorded.body, ensure_ascii=False)
