"""Edit, then approve, on Discord: the "Edit…" button's modal, its submission judged and decided.

What an edit means (the form, the masked prefill, the policy's second look,
the one decision path) is :mod:`tapgate.decisions.edits`; this module only
speaks Discord::

    Edit… ──decisions.edits.prepare (nothing typed yet)──► modal (type 9) | ephemeral why not
    submitted ──prepare──► ephemeral errors (nothing stored, nothing decided)
              └► stored (record before acknowledging) ──► approve_edit ──► type 7, the card

A Discord modal holds at most five text inputs of at most 4,000 characters
each, and cannot show errors on its fields: an edit that is refused is
told in an ephemeral message and the approver presses Edit… again. A call
with more than five arguments is not edited in a modal: its card offers the
web inbox instead (:func:`fits_modal`, the card's "Edit in inbox").

The button and the modal carry ``v=1&a=edit&r=<request id>`` (at most 79
characters of Discord's 100): a reference, never the arguments. The
submission's texts are stored as Discord sent them and read again when the
stored interaction is applied, so a replay approves exactly what was typed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tapgate.channels.discord.modals import INPUTS_MAX, VALUE_MAX, modal, text_input
from tapgate.channels.discord.text import escape
from tapgate.decisions.buttons import valid_request_id
from tapgate.decisions.edits import (
    WHOLE,
    EditField,
    approve_edit,
    edit_form,
    prepare,
    read_edit,
)
from tapgate.decisions.taps import Tap, TapOutcome
from tapgate.decisions.texts import EDIT_IN_WEB_INBOX, EDIT_KEEP_MASKED
from tapgate.errors import RequestNotFound
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request
from tapgate.policy.masking import mask_text, reveal_invisible

__all__ = ["DiscordEdits", "edit_custom_id", "edit_modal", "fits_modal", "parse_edit_custom_id"]

_EDIT = re.compile(r"v=1&a=edit&r=([A-Za-z0-9_-]{1,64})")
_ERRORS_MAX = 1800


def edit_custom_id(request_id: str) -> str:
    """The ``custom_id`` of "Edit…" and of its modal: ``v=1&a=edit&r=<request id>``."""
    if not valid_request_id(request_id):
        raise ValueError(f"cannot build an edit custom_id for {request_id!r}")
    return f"v=1&a=edit&r={request_id}"


def parse_edit_custom_id(data: object) -> str | None:
    """The request id of an edit ``custom_id``, or ``None``; never raises."""
    found = _EDIT.fullmatch(data) if isinstance(data, str) else None
    return None if found is None else found[1]


def fits_modal(request: Request) -> bool:
    """Whether ``request``'s edit form fits one Discord modal (one input per argument)."""
    if len(request.arguments) > INPUTS_MAX:
        return False
    return all(len(f.text) <= VALUE_MAX for f in edit_form(request))


def edit_modal(request: Request) -> dict[str, Any]:
    """The MODAL response: one input per argument, prefilled as the form shows it (masked)."""
    inputs = [_input(form_field) for form_field in edit_form(request)]
    return modal(edit_custom_id(request.id), "Edit, then approve", inputs)


def _input(form_field: EditField) -> dict[str, Any]:
    """One argument's input: optional, so an empty string can be typed; a hint for JSON/masks."""
    hint = EDIT_KEEP_MASKED if form_field.masked else ("JSON" if form_field.json else None)
    text = form_field.text
    return text_input(
        form_field.id,
        _label(form_field.key),
        required=False,
        value=text,
        paragraph=form_field.json or len(text) > 60 or "\n" in text,
        placeholder=hint,
    )


def _label(key: str) -> str:
    """An argument's name as a label: masked, invisible characters shown (plain text there)."""
    return reveal_invisible(mask_text(key)) or "(empty name)"


class DiscordEdits:
    """Opens the edit modal, judges a submission before it is stored, decides a stored one."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    async def open(self, user_id: str, request_id: str) -> dict[str, Any] | str:
        """The edit modal for an approver of an open, editable request; else why not."""
        answer = _tap(user_id, request_id)
        judged = await prepare(self._gate, answer, {})  # who, self-approval, editable
        request = judged.outcome.request
        if judged.arguments is None or request is None:
            return judged.errors.get(WHOLE) or judged.outcome.message
        return edit_modal(request) if fits_modal(request) else EDIT_IN_WEB_INBOX

    async def judge(self, user_id: str, request_id: str, texts: Mapping[str, str]) -> str | None:
        """Why this submission cannot approve (told, nothing stored), or ``None``: store it."""
        judged = await prepare(self._gate, _tap(user_id, request_id), texts)
        if judged.arguments is not None:
            return None
        request = judged.outcome.request
        return _errors(judged.errors, edit_form(request) if request is not None else ())

    async def decide(
        self, user_id: str, request_id: str, texts: Mapping[str, str], event: str
    ) -> TapOutcome:
        """Approve the stored submission's edit once (:func:`approve_edit` judges it again)."""
        answer = _tap(user_id, request_id)
        try:
            request = await self._gate.get_request(request_id)
        except RequestNotFound:
            return await approve_edit(self._gate, answer, {}, event=event)  # says it is gone
        edited, errors = read_edit(request, texts)
        if errors:  # only a replay after a change can get here: judged before it was stored
            if not await self._gate.remember_event("discord", event):
                return TapOutcome(kind="duplicate", message="")
            return TapOutcome(kind="edit_refused", message=_errors(errors, edit_form(request)))
        return await approve_edit(self._gate, answer, edited, event=event)


def _tap(user_id: str, request_id: str) -> Tap:
    return Tap(channel="discord", user_id=user_id, action="approve", request_id=request_id)


def _errors(errors: Mapping[str, str], fields: tuple[EditField, ...]) -> str:
    """The errors as one message: the whole edit's first, then each argument's (escaped)."""
    names = {f.id: f.key for f in fields}
    lines = [errors[WHOLE]] if WHOLE in errors else []
    for field_id, problem in errors.items():
        if field_id != WHOLE:
            name = escape(_label(names.get(field_id, field_id)))[:100]
            lines.append(f"{name}: {problem}")
    text = "\n".join(lines) or "This edit cannot be approved."
    return text[:_ERRORS_MAX] + "\nPress Edit… again to change it."
