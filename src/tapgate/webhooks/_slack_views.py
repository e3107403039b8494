"""Slack's formats, free of the gate: signatures, interaction payloads, replies.

A request is Slack's when ``X-Slack-Signature`` is the HMAC of
``v0:{timestamp}:{raw body}`` and the timestamp is within five minutes: a
pure check over the raw bytes, before anything parses them.

An interaction payload is signed, but its *shape* is still whatever arrived:
the fields tapgate acts on (who tapped, in which workspace and conversation,
which button, which request) are read here into a frozen :class:`Interaction`,
and anything that does not fit is ``None`` — the caller answers 400, never
500. What goes back is here too: ephemeral sentences, the deny-reason modal
and a question's answer modal (:class:`SlackReplies`). The webhooks layer may
not import ``tapgate.notifiers``, and a modal is a few lines of Block Kit.

Everything from a request is untrusted text (DESIGN.md decision 8): the tool
name, or a question's subject, in a modal is escaped and clipped and sits in
``plain_text``; ephemeral sentences (which name the tool or a question's
subject) are escaped before they are sent, so they cannot mention or link.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from tapgate.core.actions import SLACK_ACTIONS, TapAction, valid_request_id
from tapgate.core.models import Request
from tapgate.core.taps import ANSWER_MAX, short, title

__all__ = [
    "ANSWER_BLOCK",
    "DENY_CALLBACK_ID",
    "REASON_MAX",
    "REPLY_CALLBACK_ID",
    "SIGNATURE_HEADER",
    "SIGNATURE_WINDOW",
    "TIMESTAMP_HEADER",
    "Interaction",
    "SignatureCheck",
    "SlackReplies",
    "check_signature",
    "deny_modal",
    "parse_action",
    "parse_deny_submission",
    "parse_reply_submission",
    "reply_modal",
    "slack_signature",
    "verify_signature",
]

_log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Slack-Signature"
TIMESTAMP_HEADER = "X-Slack-Request-Timestamp"
SIGNATURE_WINDOW = 300.0
"""Seconds a request's timestamp may be from now: Slack's documented replay window."""
_TIMESTAMP = re.compile(r"[0-9]{1,12}")

DENY_CALLBACK_ID = "tapgate_deny"
"""``callback_id`` of the deny-reason modal (a namespace apart from ``action_id``)."""
REASON_MAX = 2000
"""Longest reason accepted: plenty for a sentence to the agent, small for the audit log."""
REPLY_CALLBACK_ID = "tapgate_reply"
"""``callback_id`` of a question's answer modal."""
ANSWER_BLOCK = "answer"
"""``block_id`` of the answer input: where a submission's error is shown."""
_REASON_BLOCK = "reason"
_REASON_ACTION = "reason"
_ANSWER_ACTION = "answer"
_METADATA_MAX = 3000  # Slack's private_metadata limit
_SLACK_ERRORS = (SlackApiError, aiohttp.ClientError, TimeoutError)
_PLAIN_MAX = 500  # ×5 at worst once escaped (``&`` → ``&amp;``): inside a section's 3000


SignatureCheck = Literal["ok", "missing", "stale", "mismatch"]


def slack_signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` Slack sends: ``v0=`` + hex HMAC-SHA256 of ``v0:{ts}:{body}``."""
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    return "v0=" + hmac.new(secret, base, hashlib.sha256).hexdigest()


def check_signature(
    secret: bytes, body: bytes, *, timestamp: str | None, signature: str | None, now: float
) -> SignatureCheck:
    """Why a request is or is not Slack's, judged on the raw bytes at ``now`` (epoch seconds).

    The timestamp must be plain ASCII digits (``int()`` would also take
    ``" 1_7"`` or Arabic-Indic digits) within :data:`SIGNATURE_WINDOW` of
    ``now``; the signature is compared in constant time, as bytes, because
    ``hmac.compare_digest`` raises on non-ASCII text instead of saying no.
    """
    if not secret or not timestamp or not signature:
        return "missing"
    if _TIMESTAMP.fullmatch(timestamp) is None or not signature.isascii():
        return "mismatch"
    if abs(now - int(timestamp)) > SIGNATURE_WINDOW:
        return "stale"
    expected = slack_signature(secret, timestamp, body).encode("ascii")
    return "ok" if hmac.compare_digest(expected, signature.encode("ascii")) else "mismatch"


def verify_signature(
    secret: bytes, body: bytes, *, timestamp: str | None, signature: str | None, now: float
) -> bool:
    """True when the request is Slack's and fresh (see :func:`check_signature`)."""
    check = check_signature(secret, body, timestamp=timestamp, signature=signature, now=now)
    return check == "ok"


@dataclass(frozen=True, kw_only=True, slots=True)
class Interaction:
    """One tap or one modal submission (a deny's reason, a question's answer in ``reason``).

    ``team`` is the tapper's workspace: ``user.team_id``, their home
    workspace, which is what ``approvers[].slack_team`` names; ``None`` when
    the payload does not say. Never the payload's ``team.id``: in a Slack
    Connect channel that is the workspace the *message* lives in, so a
    person from another organisation would pass for one of ours. A tap whose
    workspace is unknown fails any workspace check. ``channel`` is where
    ephemeral answers go.
    """

    action: TapAction
    request_id: str
    user_id: str
    team: str | None
    channel: str | None = None
    trigger_id: str | None = None
    response_url: str | None = None
    reason: str | None = None


def parse_action(body: object) -> Interaction | None:
    """The tap in a ``block_actions`` payload, or ``None`` if it is not one of ours."""
    if not isinstance(body, dict):
        return None
    actions = body.get("actions")
    if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
        return None
    action = SLACK_ACTIONS.get(_str(actions[0].get("action_id")) or "")
    request_id = actions[0].get("value")
    user = _tapper(body)
    if action is None or user is None or not isinstance(request_id, str):
        return None
    if not valid_request_id(request_id):
        return None
    container = _dict(body.get("container"))
    channel = _str(container.get("channel_id")) or _str(_dict(body.get("channel")).get("id"))
    return Interaction(
        action=action,
        request_id=request_id,
        user_id=user[0],
        team=user[1],
        channel=channel,
        trigger_id=_str(body.get("trigger_id")),
        response_url=_str(body.get("response_url")),
    )


def parse_deny_submission(body: object) -> Interaction | None:
    """The deny (with its optional reason) in a ``view_submission`` of our modal."""
    return _submission(body, DENY_CALLBACK_ID, "deny", (_REASON_BLOCK, _REASON_ACTION), REASON_MAX)


def parse_reply_submission(body: object) -> Interaction | None:
    """The answer in a ``view_submission`` of a question's answer modal.

    ``reason`` is the answer, stripped; ``None`` when only blanks were typed
    (the input is required, but Slack counts spaces as an answer).
    """
    block = (ANSWER_BLOCK, _ANSWER_ACTION)
    return _submission(body, REPLY_CALLBACK_ID, "reply", block, ANSWER_MAX)


def _submission(
    body: object, callback_id: str, action: TapAction, field: tuple[str, str], max_len: int
) -> Interaction | None:
    """The submission of our modal ``callback_id``: whose, which request, and the typed text."""
    if not isinstance(body, dict):
        return None
    view = _dict(body.get("view"))
    metadata = _metadata(view.get("private_metadata"))
    user = _tapper(body)
    if view.get("callback_id") != callback_id or metadata is None or user is None:
        return None
    request_id, channel = metadata
    values = _dict(_dict(view.get("state")).get("values"))
    typed = _str(_dict(_dict(values.get(field[0])).get(field[1])).get("value"))
    typed = typed.strip()[:max_len] if typed else None
    return Interaction(
        action=action,
        request_id=request_id,
        user_id=user[0],
        team=user[1],
        channel=channel,
        reason=typed or None,
    )


def deny_modal(request: Request, channel: str | None) -> dict[str, Any]:
    """The ``views.open`` view that asks for an optional reason before denying.

    ``private_metadata`` carries the request id and the conversation of the
    tapped message: Slack hands it back with the submission, so no server
    state links the two, and a forged value gains nothing (the submission is
    authorised again against that request).
    """
    metadata = json.dumps({"r": request.id, "c": channel}, separators=(",", ":"))
    question = f"Deny {request.tool} ({short(request.id)}) from {request.agent}?"
    return {
        "type": "modal",
        "callback_id": DENY_CALLBACK_ID,
        "private_metadata": metadata[:_METADATA_MAX],
        "title": {"type": "plain_text", "text": "Deny request"},
        "submit": {"type": "plain_text", "text": "Deny"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": {"type": "plain_text", "text": _plain(question)}},
            {
                "type": "input",
                "block_id": _REASON_BLOCK,
                "optional": True,
                "label": {"type": "plain_text", "text": "Reason (sent back to the agent)"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": _REASON_ACTION,
                    "multiline": True,
                    "max_length": REASON_MAX,
                },
            },
        ],
    }


def reply_modal(request: Request, channel: str | None) -> dict[str, Any]:
    """The ``views.open`` view that asks for the answer to a question (required).

    It names the question (agent, short id, the subject as one-line replies
    show it) but does not repeat its text: the webhooks layer has no access
    to the notifiers' masking, and the text is in the message just tapped.
    ``private_metadata`` works as in :func:`deny_modal`.
    """
    metadata = json.dumps({"r": request.id, "c": channel}, separators=(",", ":"))
    intro = f"Answer the question from {request.agent} ({short(request.id)})"
    subject = request.arguments.get("subject")
    if isinstance(subject, str) and subject.strip():
        intro += f": {title(request)}"
    return {
        "type": "modal",
        "callback_id": REPLY_CALLBACK_ID,
        "private_metadata": metadata[:_METADATA_MAX],
        "title": {"type": "plain_text", "text": "Answer the agent"},
        "submit": {"type": "plain_text", "text": "Send answer"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": {"type": "plain_text", "text": _plain(intro)}},
            {
                "type": "input",
                "block_id": ANSWER_BLOCK,
                "label": {"type": "plain_text", "text": "Your answer (sent back to the agent)"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": _ANSWER_ACTION,
                    "multiline": True,
                    "max_length": ANSWER_MAX,
                },
            },
        ],
    }


class SlackReplies:
    """How a tapper hears back: an ephemeral sentence, or a modal (deny reason, answer).

    Failures are logged, never raised: the decision (or the refusal) stands
    whether or not Slack shows the sentence. Nothing is retried, because a
    re-sent ephemeral or modal is worse than none.
    """

    def __init__(self, client: AsyncWebClient, *, timeout: float) -> None:
        self._client = client
        self._timeout = timeout

    async def tell(self, interaction: Interaction, text: str) -> None:
        """Show ``text`` to the tapper only: in the conversation, else via ``response_url``.

        ``chat.postEphemeral`` works as long as the bot is in the conversation
        (the approval DM); a ``response_url`` only 5 times within 30 minutes,
        so it is the fallback. ``text`` is escaped here: it may name a tool or
        a question's subject, and Slack would read ``<!here>`` in it as a mention.
        """
        text = _escape(text)
        if interaction.channel is not None:
            try:
                await self._client.chat_postEphemeral(
                    channel=interaction.channel, user=interaction.user_id, text=text
                )
            except _SLACK_ERRORS as error:
                _log.warning("Slack chat.postEphemeral failed: %s", error)
            else:
                return
        if interaction.response_url is None:
            _log.warning("could not tell Slack user %s: %s", interaction.user_id, text)
            return
        # Only a signed payload carries a response_url, so it is Slack's own URL.
        webhook = AsyncWebhookClient(
            interaction.response_url,
            timeout=self._timeout,  # type: ignore[arg-type]  # handed to aiohttp as seconds
            retry_handlers=[],
        )
        try:
            sent = await webhook.send(text=text, response_type="ephemeral", replace_original=False)
        except (aiohttp.ClientError, TimeoutError) as error:
            _log.warning("Slack response_url failed: %s", error)
            return
        if sent.status_code != 200:
            _log.warning("Slack response_url answered HTTP %s", sent.status_code)

    async def open_deny_modal(self, interaction: Interaction, request: Request) -> bool:
        """Open the reason modal on the tap's ``trigger_id``; False if Slack would not.

        A trigger id is valid for 3 seconds after the click and for one view.
        """
        return await self._open(interaction, deny_modal(request, interaction.channel), request)

    async def open_reply_modal(self, interaction: Interaction, request: Request) -> bool:
        """Open a question's answer modal on the tap's ``trigger_id``; False if Slack would not."""
        return await self._open(interaction, reply_modal(request, interaction.channel), request)

    async def _open(self, interaction: Interaction, view: dict[str, Any], request: Request) -> bool:
        if interaction.trigger_id is None:
            return False
        try:
            await self._client.views_open(trigger_id=interaction.trigger_id, view=view)
        except _SLACK_ERRORS as error:
            _log.warning("Slack views.open failed for request %s: %s", request.id, error)
            return False
        return True


def _tapper(body: dict[str, Any]) -> tuple[str, str | None] | None:
    """``(user id, workspace)`` of whoever clicked; ``None`` without a user id."""
    user = _dict(body.get("user"))
    user_id = _str(user.get("id"))
    if user_id is None:
        return None
    return user_id, _str(user.get("team_id"))


def _metadata(value: object) -> tuple[str, str | None] | None:
    """``(request id, channel)`` from our ``private_metadata``, or ``None``."""
    if not isinstance(value, str) or len(value) > _METADATA_MAX:
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    if not isinstance(data, dict) or not valid_request_id(data.get("r")):
        return None
    return data["r"], _str(data.get("c"))


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str | None:
    """A non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


def _plain(text: str) -> str:
    """Clipped, then Slack's three control characters escaped (``&`` first).

    Clipping first means an escape sequence is never cut in half.
    """
    clipped = text if len(text) <= _PLAIN_MAX else text[: _PLAIN_MAX - 1] + "…"
    return _escape(clipped)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
