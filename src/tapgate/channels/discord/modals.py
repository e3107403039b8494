"""The modals tapgate opens in Discord: a deny's reason and a question's answer.

A modal is the interaction response type 9 with one text input. Its
``custom_id`` is the domain's button data for what the submission asks
(``v=1&a=deny_reason&r=<id>``, ``v=1&a=reply&r=<id>``): Discord hands it
back with the submission (type 5), which is verified and authorised again
like any press, so a forged one gains nothing. Titles and labels are ours
(at most 45 characters); nothing from the request appears in the modal.
"""

from __future__ import annotations

from typing import Any

from tapgate.decisions.buttons import deny_reason_postback_data, postback_data
from tapgate.decisions.taps import ANSWER_MAX

__all__ = ["ANSWER_INPUT", "MODAL", "REASON_INPUT", "REASON_MAX", "answer_modal", "deny_modal"]

MODAL = 9
"""Interaction response type: open a modal."""
REASON_INPUT = "reason"
ANSWER_INPUT = "answer"
REASON_MAX = 2000
_PARAGRAPH = 2
_TEXT_INPUT = 4


def deny_modal(request_id: str) -> dict[str, Any]:
    """The response that asks for an optional reason before denying ``request_id``."""
    return _modal(
        deny_reason_postback_data(request_id),
        title="Deny request",
        input_id=REASON_INPUT,
        label="Reason (sent back to the agent)",
        required=False,
        max_length=REASON_MAX,
    )


def answer_modal(request_id: str) -> dict[str, Any]:
    """The response that asks for the answer to a question (required)."""
    return _modal(
        postback_data("reply", request_id),
        title="Answer the question",
        input_id=ANSWER_INPUT,
        label="Your answer (sent to the agent)",
        required=True,
        max_length=ANSWER_MAX,
    )


def _modal(
    custom_id: str, *, title: str, input_id: str, label: str, required: bool, max_length: int
) -> dict[str, Any]:
    text_input = {
        "type": _TEXT_INPUT,
        "custom_id": input_id,
        "style": _PARAGRAPH,
        "label": label,
        "required": required,
        "max_length": max_length,
    }
    return {
        "type": MODAL,
        "data": {
            "custom_id": custom_id,
            "title": title,
            "components": [{"type": 1, "components": [text_input]}],
        },
    }
