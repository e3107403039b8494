"""The modals tapgate opens in Discord: a deny's reason, "Deny all"'s reason, a question's answer.

A modal is the interaction response type 9 with up to five text inputs,
each in its own action row. Its ``custom_id`` is the domain's button data
for what the submission asks (``v=1&a=deny_reason&r=<id>``,
``v=1&a=reply&r=<id>``, ``v=1&a=deny_all&b=<batch id>``): Discord hands it
back with the submission (type 5), which is verified and authorised again
like any press, so a forged one gains nothing. Titles and labels are ours
(at most 45 characters); nothing from the request appears in these three
(the edit modal, :mod:`.edits`, shows the arguments, masked).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tapgate.decisions.buttons import (
    batch_postback_data,
    deny_reason_postback_data,
    postback_data,
)
from tapgate.decisions.taps import ANSWER_MAX
from tapgate.delivery.presentation import clip

__all__ = [
    "ANSWER_INPUT",
    "INPUTS_MAX",
    "LABEL_MAX",
    "MODAL",
    "REASON_INPUT",
    "REASON_MAX",
    "VALUE_MAX",
    "answer_modal",
    "deny_all_modal",
    "deny_modal",
    "modal",
    "text_input",
]

MODAL = 9
"""Interaction response type: open a modal."""
REASON_INPUT = "reason"
ANSWER_INPUT = "answer"
REASON_MAX = 2000
INPUTS_MAX = 5
"""Text inputs one modal holds (Discord's limit)."""
LABEL_MAX = 45
"""A modal's title and a text input's label, in characters (Discord's limit)."""
VALUE_MAX = 4000
"""A text input's prefilled ``value`` and ``max_length`` (Discord's limit)."""
_SHORT = 1
_PARAGRAPH = 2
_TEXT_INPUT = 4


def deny_modal(request_id: str) -> dict[str, Any]:
    """The response that asks for an optional reason before denying ``request_id``."""
    return modal(
        deny_reason_postback_data(request_id), "Deny request", [_reason("sent back to the agent")]
    )


def deny_all_modal(batch_id: str) -> dict[str, Any]:
    """The response that asks for one optional reason before denying a batch's open calls."""
    return modal(
        batch_postback_data("deny_all", batch_id),
        "Deny every open call",
        [_reason("sent back with every call")],
    )


def answer_modal(request_id: str) -> dict[str, Any]:
    """The response that asks for the answer to a question (required)."""
    answer = text_input(
        ANSWER_INPUT, "Your answer (sent to the agent)", required=True, max_length=ANSWER_MAX
    )
    return modal(postback_data("reply", request_id), "Answer the question", [answer])


def _reason(where: str) -> dict[str, Any]:
    return text_input(REASON_INPUT, f"Reason ({where})", required=False, max_length=REASON_MAX)


def text_input(
    input_id: str,
    label: str,
    *,
    required: bool,
    max_length: int = VALUE_MAX,
    value: str = "",
    paragraph: bool = True,
    placeholder: str | None = None,
) -> dict[str, Any]:
    """One text input (component type 4) within Discord's limits."""
    found: dict[str, Any] = {
        "type": _TEXT_INPUT,
        "custom_id": input_id,
        "style": _PARAGRAPH if paragraph else _SHORT,
        "label": clip(label, LABEL_MAX),
        "required": required,
        "max_length": min(max_length, VALUE_MAX),
    }
    if value:
        found["value"] = value[:VALUE_MAX]
    if placeholder:
        found["placeholder"] = clip(placeholder, 100)
    return found


def modal(custom_id: str, title: str, inputs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The MODAL response: each of at most five inputs in its own action row."""
    if not 0 < len(inputs) <= INPUTS_MAX:
        raise ValueError(f"a Discord modal holds 1 to {INPUTS_MAX} inputs, not {len(inputs)}")
    return {
        "type": MODAL,
        "data": {
            "custom_id": custom_id,
            "title": clip(title, LABEL_MAX),
            "components": [{"type": 1, "components": [item]} for item in inputs],
        },
    }
