"""Edit, then approve: an approver changes a call's arguments and the policy judges it again.

decision 0013-every-answer-narrows: every answer narrows. An edited call is a new call as
far as the policy is concerned, so it is evaluated again, and the approval
covers the edited arguments only:

- **the form** (:func:`edit_form`): one field per argument, strings as typed
  text and everything else as JSON. A value that hides a secret is shown
  masked, never in clear; left exactly as shown it keeps its value, and a
  field that still contains the mask after being changed is refused (the
  mask must never reach the tool as if it were the secret);
- **reading** (:func:`read_edit`): the same arguments (none added, none
  removed), each of the same JSON type, finite numbers, the whole call within
  :data:`~tapgate.policy.limits.EDIT_MAX_BYTES`;
- **judging** (:func:`judge`): ``deny`` refuses the edit with the policy's
  reason; ``ask`` needs the editor among the edited call's approvers and a
  quorum of one; so an edit can never turn a call the policy denies into an
  allowed one, nor reach past the approvers the edited call would have had;
- **deciding** (:func:`approve_edit`): judged again (a stored submission may
  be replayed after a config change), then :func:`tapgate.decisions.taps.tap`, the
  one decision path: the approver check inside the compare-and-set, exactly
  once per event, and the audit line of the decision holding the proposal
  and the edit, both masked.

An edit approves this call once: no session or "always" grant is made from
it (a grant is keyed by the proposal's fingerprint). A request with a quorum
is not editable: the other approvers would approve a call they never saw.
Surfaces (the Slack modal, later the web inbox) only translate: they show
the form, hand back the typed texts, and show the errors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tapgate.decisions.refusals import record_refusal
from tapgate.decisions.taps import Tap, TapOutcome, check, tap
from tapgate.decisions.texts import (
    EDIT_KEEP_MASKED,
    NOT_APPROVER,
    SELF_APPROVAL,
    edit_denied,
    edited_reason,
    is_question,
)
from tapgate.errors import RequestNotFound
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request, ToolCall, args_digest, canonical_json
from tapgate.policy.limits import EDIT_MAX_BYTES
from tapgate.policy.masking import MASK, mask_arguments, reveal_invisible

_SELF_OWNED = "self-approval: the agent's owner"
"""The audit line's reason when the agent's owner opens an edit of its call."""

__all__ = [
    "FIELDS_MAX",
    "FIELD_MAX",
    "WHOLE",
    "EditCheck",
    "EditField",
    "approve_edit",
    "edit_form",
    "judge",
    "not_editable",
    "prepare",
    "read_edit",
    "typed_text",
]

FIELD_MAX = 3000
"""Longest prefilled text of one field: Slack's text inputs hold 3000 characters."""
FIELDS_MAX = 40
"""Most arguments a form shows: a Slack modal holds 100 blocks, and people read forms."""
WHOLE = ""
"""The error key of a problem with the whole edit rather than one field."""


@dataclass(frozen=True, kw_only=True, slots=True)
class EditField:
    """One argument as a form shows it. ``id`` is stable for the request: ``arg0``, ``arg1``..."""

    id: str
    key: str
    text: str
    """The prefill: the value itself for a string, else JSON; masked where it hides a secret,
    invisible characters shown (``⟨U+202E⟩``). Submitted as shown, the value is kept."""
    json: bool
    masked: bool
    """The prefill hides a secret: left as shown, the original value is kept."""


@dataclass(frozen=True, kw_only=True, slots=True)
class EditCheck:
    """What a submitted edit amounts to before anything is decided.

    ``arguments`` is the edited call when it may be approved; otherwise
    ``errors`` maps a field id (or ``""``, the whole edit) to what is wrong.
    ``outcome`` is :func:`~tapgate.decisions.taps.check`'s answer for the editor.
    """

    outcome: TapOutcome
    arguments: Mapping[str, Any] | None = None
    errors: Mapping[str, str] = field(default_factory=dict)


def not_editable(request: Request) -> str | None:
    """Why ``request`` cannot be edited, or ``None`` when it can (cards offer Edit then)."""
    if is_question(request):
        return "A question is answered, not edited."
    if request.quorum > 1:
        return "This call needs several approvals: it can be approved as asked, not edited."
    if not request.arguments:
        return "This call has no arguments to edit."
    if len(request.arguments) > FIELDS_MAX:
        return f"This call has more than {FIELDS_MAX} arguments: too many to edit here."
    if any(len(f.text) > FIELD_MAX for f in _fields(request)):
        return f"An argument is longer than {FIELD_MAX} characters: too long to edit here."
    return None


def edit_form(request: Request) -> tuple[EditField, ...]:
    """The fields of ``request``'s edit form, in key order (see the module docstring)."""
    return tuple(_fields(request))


def _fields(request: Request) -> list[EditField]:
    fields = []
    for index, key in enumerate(sorted(request.arguments)):
        value = request.arguments[key]
        shown = mask_arguments({key: value})
        masked_value = next(iter(shown.values()))  # the key itself may be masked too
        text, prefill = _text(value), _text(masked_value)
        fields.append(
            EditField(
                id=f"arg{index}",
                key=key,
                text=reveal_invisible(prefill),
                json=not isinstance(value, str),
                masked=prefill != text,
            )
        )
    return fields


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    indent = 2 if isinstance(value, dict | list) else None
    return json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=True)


def typed_text(field: EditField, value: str) -> str:
    """What was typed in a browser's ``<textarea>``, with its CRLF line ends read as the prefill's.

    A browser submits every line end as CRLF: a field sent back untouched
    must compare equal to its prefill (and so keep a masked value).
    """
    same = value.replace("\r\n", "\n") == field.text.replace("\r\n", "\n")
    return field.text if same else value.replace("\r\n", "\n")


def read_edit(
    request: Request, texts: Mapping[str, str | None]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The edited arguments from the typed ``texts`` (by field id), and the errors by field id.

    A field missing from ``texts`` keeps its value; ``None`` is an empty field.
    """
    edited: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for form_field in _fields(request):
        original = request.arguments[form_field.key]
        typed = texts.get(form_field.id, form_field.text)
        typed = "" if typed is None else typed
        if typed == form_field.text:
            edited[form_field.key] = original
            continue
        if form_field.masked and MASK in typed:
            errors[form_field.id] = EDIT_KEEP_MASKED
            continue
        value, problem = (typed, None) if not form_field.json else _json(typed, original)
        if problem is not None:
            errors[form_field.id] = problem
            continue
        edited[form_field.key] = value
    if not errors and len(canonical_json(edited).encode()) > EDIT_MAX_BYTES:
        errors[WHOLE] = f"The edited call is larger than {EDIT_MAX_BYTES // 1024} KiB."
    return edited, errors


def _json(typed: str, original: Any) -> tuple[Any, str | None]:
    """``typed`` read as JSON of ``original``'s type, or why it is not."""
    try:
        value = json.loads(typed, parse_constant=_no_constant)
        # What json.loads reads but the stored text cannot hold: 1e999 (infinity),
        # a lone surrogate ("\ud800", which UTF-8 cannot encode). RecursionError:
        # nesting a few thousand deep. Each was a 500 from the approver's form.
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode()
    except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        return None, "Not valid JSON."
    if _kind(value) != _kind(original):
        return None, f"Must stay JSON of the same type ({_kind(original)})."
    return value, None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def judge(gate: Gate, request: Request, arguments: Mapping[str, Any], approver: str) -> str | None:
    """The policy's objection to ``approver`` approving ``arguments`` for ``request``, or ``None``.

    The edited call keeps the request's agent, session, tool and risk: only
    its arguments changed, and only those are judged again.
    """
    call = ToolCall(
        tool=request.tool,
        arguments=arguments,
        agent=request.agent,
        session=request.session,
        risk=request.risk,
    )
    verdict = gate.policy.evaluate(call)
    if verdict.action == "deny":
        return edit_denied(verdict.reason)
    if verdict.action == "ask":
        reach = gate.directory.expand(verdict.approvers)
        if verdict.escalate_after is not None and verdict.escalate_to:
            # expand(()) means everyone: only a rule that escalates adds its approvers
            reach += gate.directory.expand(verdict.escalate_to)
        if approver not in reach:
            return edit_denied(f"the edited call goes to other approvers (rule {verdict.rule})")
        if verdict.quorum > 1:
            return edit_denied(f"the edited call needs {verdict.quorum} approvals")
    return None


async def prepare(gate: Gate, answer: Tap, texts: Mapping[str, str | None]) -> EditCheck:
    """May ``answer``'s tapper approve this edit now? Run before a surface acknowledges it.

    Decides nothing; refusals for not being an approver are audited by
    :func:`~tapgate.decisions.taps.check`, an edit the policy refuses here.
    """
    may = await check(gate, answer)
    request = may.request
    if may.kind != "ready" or request is None or may.approver is None:
        return EditCheck(outcome=may, errors={WHOLE: may.message})
    if request.owner is not None and request.owner == may.approver:
        # The approval would be refused as self-approval: say so before anything is typed.
        await _audit_refused(
            gate, answer, may.approver, request, arguments=request.arguments, why=_SELF_OWNED
        )
        own = TapOutcome(
            kind="self_approval", approver=may.approver, message=SELF_APPROVAL, request=request
        )
        return EditCheck(outcome=own, errors={WHOLE: SELF_APPROVAL})
    why = not_editable(request)
    if why is not None:
        return EditCheck(outcome=may, errors={WHOLE: why})
    edited, errors = read_edit(request, texts)
    if errors:
        return EditCheck(outcome=may, errors=errors)
    refused = judge(gate, request, edited, may.approver)
    if refused is not None:
        await _audit_refused(gate, answer, may.approver, request, arguments=edited, why=refused)
        return EditCheck(outcome=may, errors={WHOLE: refused})
    return EditCheck(outcome=may, arguments=edited)


async def approve_edit(
    gate: Gate, answer: Tap, arguments: Mapping[str, Any], *, event: str | None = None
) -> TapOutcome:
    """Approve ``answer``'s request with ``arguments`` instead of the agent's, if still allowed.

    Unchanged arguments are a plain approval. ``event`` works as in
    :func:`~tapgate.decisions.taps.tap`: a redelivered submission decides nothing.
    """
    if answer.action != "approve":
        raise ValueError("an edit approves: its tap's action must be 'approve'")
    try:
        request = await gate.get_request(answer.request_id)
    except RequestNotFound:
        request = None
    if request is None or not request.is_pending:
        return await tap(gate, answer, event=event)  # the tap says it is gone, or too late
    approver = gate.directory.identify(answer.channel, answer.user_id, answer.team)
    changed = [k for k in sorted(request.arguments) if _differs(request, arguments, k)]
    why = _refusal(gate, request, arguments, approver)
    if why is None and not changed:
        return await tap(gate, answer, event=event)  # nothing edited: a plain approval
    if why is not None:
        return await _refuse(
            gate, answer, approver, request, arguments=arguments, why=why, event=event
        )
    detail = {"edit": _edit_detail(request, arguments, changed)}
    reason = edited_reason(approver or answer.user_id, changed)
    return await tap(gate, answer, reason=reason, event=event, edited=arguments, detail=detail)


_NOT_APPROVER = "not an approver"


async def _refuse(
    gate: Gate,
    answer: Tap,
    approver: str | None,
    request: Request,
    *,
    arguments: Mapping[str, Any],
    why: str,
    event: str | None,
) -> TapOutcome:
    """Refuse an edit (audited once per ``event``); a stranger is told only that."""
    if event is not None and not await gate.remember_event(answer.channel, event):
        return TapOutcome(kind="duplicate", approver=approver, message="")
    await _audit_refused(gate, answer, approver, request, arguments=arguments, why=why)
    if why == _NOT_APPROVER:  # told so, not what the policy thinks of the edit
        return TapOutcome(kind="not_approver", approver=approver, message=NOT_APPROVER)
    return TapOutcome(kind="edit_refused", approver=approver, message=why)


def _refusal(
    gate: Gate, request: Request, arguments: Mapping[str, Any], approver: str | None
) -> str | None:
    """Why ``approver`` may not approve ``arguments`` for ``request`` (strangers first)."""
    if approver is None or approver not in request.approvers:
        return _NOT_APPROVER
    why = not_editable(request) or _conforms(request, arguments)
    return why or judge(gate, request, arguments, approver)


def _differs(request: Request, arguments: Mapping[str, Any], key: str) -> bool:
    return canonical_json(request.arguments[key]) != canonical_json(arguments.get(key))


def _conforms(request: Request, arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` is no edit of ``request``'s (other keys, other types), or ``None``."""
    if set(arguments) != set(request.arguments):
        return "The edited call must keep the same arguments."
    for key, value in arguments.items():
        if _kind(value) != _kind(request.arguments[key]):
            return f"The argument {key[:40]!r} must keep its type."
    if len(canonical_json(arguments).encode()) > EDIT_MAX_BYTES:
        return f"The edited call is larger than {EDIT_MAX_BYTES // 1024} KiB."
    return None


def _edit_detail(
    request: Request, arguments: Mapping[str, Any], changed: list[str] | None = None
) -> dict[str, Any]:
    """The proposal and the edit as the audit keeps them: digests, and the arguments masked."""
    detail: dict[str, Any] = {
        "proposed": {"digest": request.args_digest, "arguments": mask_arguments(request.arguments)},
        "edited": {"digest": args_digest(arguments), "arguments": mask_arguments(arguments)},
    }
    if changed is not None:
        detail["changed"] = changed
    return detail


async def _audit_refused(
    gate: Gate,
    answer: Tap,
    approver: str | None,
    request: Request,
    *,
    arguments: Mapping[str, Any],
    why: str,
) -> None:
    """Audit an edit refused before any compare-and-set, with the edit it refused."""
    detail = {
        "channel": answer.channel,
        "user_id": answer.user_id,
        "wanted": "approved",
        "why": why,
        "edit": _edit_detail(request, arguments),
    }
    actor = approver or f"{answer.channel}:{answer.user_id}"
    await record_refusal(gate, request.id, actor=actor, detail=detail)
