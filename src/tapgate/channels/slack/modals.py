"""The modals tapgate opens in Slack: a deny's reason, a question's answer, an edit.

Everything from a request is untrusted text (decision 0008-untrusted-text): the tool
name, or a question's subject, sits in ``plain_text``, clipped and escaped.
``private_metadata`` carries the request id and the conversation of the
tapped message: Slack hands it back with the submission, so no server state
links the two, and a forged value gains nothing (the submission is
authorised again against that request). A modal is a few lines of Block Kit,
and the webhooks layer may not import ``tapgate.notifiers``.
"""

from __future__ import annotations

import json
from typing import Any

from tapgate.channels.slack.payloads import (
    ANSWER_ACTION,
    ANSWER_BLOCK,
    DENY_ALL_CALLBACK_ID,
    DENY_CALLBACK_ID,
    EDIT_ACTION,
    EDIT_CALLBACK_ID,
    METADATA_MAX,
    REASON_ACTION,
    REASON_BLOCK,
    REASON_MAX,
    REPLY_CALLBACK_ID,
)
from tapgate.channels.slack.text import escape
from tapgate.decisions.edits import FIELD_MAX, EditField, edit_form
from tapgate.decisions.taps import ANSWER_MAX
from tapgate.decisions.texts import EDIT_KEEP_MASKED, short, title, tool_name
from tapgate.gate.models import Request
from tapgate.policy.masking import MASK, mask_text, reveal_invisible

__all__ = ["deny_all_modal", "deny_modal", "edit_modal", "reply_modal"]

_REASON: dict[str, Any] = {"field": (REASON_BLOCK, REASON_ACTION, REASON_MAX), "optional": True}
"""A deny's reason input, single or batch: optional, as long as ``REASON_MAX``."""
_LABEL_MAX = 100  # ×5 at worst once escaped: inside a label's 2000
_PLAIN_MAX = 500  # ×5 at worst once escaped (``&`` → ``&amp;``): inside a section's 3000


def deny_modal(request: Request, channel: str | None) -> dict[str, Any]:
    """The ``views.open`` view that asks for an optional reason before denying."""
    return _modal(
        request,
        channel,
        callback_id=DENY_CALLBACK_ID,
        titles=("Deny request", "Deny"),
        intro=f"Deny {tool_name(request)} ({short(request.id)}) from {request.agent}?",
        label="Reason (sent back to the agent)",
        **_REASON,
    )


def deny_all_modal(batch_id: str, calls: int, channel: str | None) -> dict[str, Any]:
    """The ``views.open`` view that asks for one optional reason before denying a batch.

    ``calls``: how many open calls the tapper would deny (the intro says so).
    The reason goes to every call it denies.
    """
    metadata = json.dumps({"b": batch_id, "c": channel}, separators=(",", ":"))
    return _modal_view(
        metadata,
        callback_id=DENY_ALL_CALLBACK_ID,
        titles=("Deny all", "Deny all"),
        intro=f"Deny the {calls} open calls of batch {batch_id[:8]}?",
        label="Reason (sent back to the agent with each call)",
        **_REASON,
    )


def reply_modal(request: Request, channel: str | None) -> dict[str, Any]:
    """The ``views.open`` view that asks for the answer to a question (required).

    It names the question (agent, short id, the subject as one-line replies
    show it) but does not repeat its text: the text is in the message just
    tapped, rendered there with the notifiers' full presentation.
    """
    intro = f"Answer the question from {request.agent} ({short(request.id)})"
    subject = request.arguments.get("subject")
    if isinstance(subject, str) and subject.strip():
        intro += f": {title(request)}"
    return _modal(
        request,
        channel,
        callback_id=REPLY_CALLBACK_ID,
        titles=("Answer the agent", "Send answer"),
        intro=intro,
        field=(ANSWER_BLOCK, ANSWER_ACTION, ANSWER_MAX),
        label="Your answer (sent back to the agent)",
        optional=False,
    )


def _modal(request: Request, channel: str | None, **view: Any) -> dict[str, Any]:
    """A single request's modal: its id and the tapped conversation in the metadata."""
    metadata = json.dumps({"r": request.id, "c": channel}, separators=(",", ":"))
    return _modal_view(metadata, **view)


def _modal_view(
    metadata: str,
    *,
    callback_id: str,
    titles: tuple[str, str],
    intro: str,
    field: tuple[str, str, int],
    label: str,
    optional: bool,
) -> dict[str, Any]:
    """One text input under a one-line introduction; ``titles`` is (title, submit button)."""
    block_id, action_id, max_length = field
    element = {
        "type": "plain_text_input",
        "action_id": action_id,
        "multiline": True,
        "max_length": max_length,
    }
    text_input: dict[str, Any] = {
        "type": "input",
        "block_id": block_id,
        "label": {"type": "plain_text", "text": label},
        "element": element,
    }
    if optional:
        text_input["optional"] = True
    return {
        "type": "modal",
        "callback_id": callback_id,
        "private_metadata": metadata[:METADATA_MAX],
        "title": {"type": "plain_text", "text": titles[0]},
        "submit": {"type": "plain_text", "text": titles[1]},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": {"type": "plain_text", "text": _plain(intro)}},
            text_input,
        ],
    }


def _plain(text: str) -> str:
    """Clipped, then Slack's three control characters escaped (``&`` first).

    Clipping first means an escape sequence is never cut in half.
    """
    clipped = text if len(text) <= _PLAIN_MAX else text[: _PLAIN_MAX - 1] + "…"
    return escape(clipped, place="plain_text")


def edit_modal(request: Request, channel: str | None) -> dict[str, Any]:
    """The ``views.open`` view with one input per argument, prefilled (``core.edits``).

    Strings are typed as they are, anything else as JSON; a value hiding a
    secret is prefilled masked and kept when left as shown. The submit
    button approves; the policy judges the edited call before anything is
    decided, and a refusal comes back as an error on the form.
    """
    fields = edit_form(request)
    intro = (
        f"Edit {tool_name(request)} ({short(request.id)}) from {request.agent}, then approve it. "
        "The policy checks the edited call again."
    )
    if any(f.masked for f in fields):
        intro += f" Values shown as {MASK} hide a secret: leave them as shown to keep them."
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "plain_text", "text": _plain(intro)}}
    ]
    blocks += [_edit_input(f) for f in fields]
    metadata = json.dumps({"r": request.id, "c": channel}, separators=(",", ":"))
    return {
        "type": "modal",
        "callback_id": EDIT_CALLBACK_ID,
        "private_metadata": metadata[:METADATA_MAX],
        "title": {"type": "plain_text", "text": "Edit, then approve"},
        "submit": {"type": "plain_text", "text": "Approve edited"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks,
    }


def _edit_input(form_field: EditField) -> dict[str, Any]:
    """One argument's input: block id = field id; optional, so an empty string can be typed."""
    element: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": EDIT_ACTION,
        "multiline": form_field.json or len(form_field.text) > 60 or "\n" in form_field.text,
        "max_length": FIELD_MAX,
    }
    if form_field.text:
        element["initial_value"] = form_field.text
    block: dict[str, Any] = {
        "type": "input",
        "block_id": form_field.id,
        "optional": True,
        "label": {"type": "plain_text", "text": _label(form_field.key)},
        "element": element,
    }
    hint = EDIT_KEEP_MASKED if form_field.masked else ("JSON" if form_field.json else None)
    if hint is not None:
        block["hint"] = {"type": "plain_text", "text": hint}
    return block


def _label(key: str) -> str:
    """An argument's name as a label: masked, invisible characters shown, clipped, escaped."""
    shown = reveal_invisible(mask_text(key))
    shown = shown if len(shown) <= _LABEL_MAX else shown[: _LABEL_MAX - 1] + "…"
    return escape(shown or "(empty name)", place="plain_text")
