"""The inbox's answers: one more surface on the one decision path (decision 0014-one-decision-path).

A click, a key or a plain form post becomes a :class:`~tapgate.decisions.taps.Tap`
(or :class:`~tapgate.decisions.taps.BatchTap`) on channel ``web`` whose user id is
the approver the *session* names: never a name from the form. From there it
is a chat tap: :func:`tapgate.decisions.taps.tap` authorises it against the
request's approvers inside the compare-and-set, decides exactly once, audits
(with ``channel: web``), refuses in :mod:`tapgate.decisions.texts`' words.
Nothing here decides anything.

Each route answers JSON to the inbox's script (``Accept: application/json``)
and a redirect back to the inbox to a plain form post, so the inbox works
without script too. A refused answer is a 409 whose message is the refusal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from aiohttp import hdrs, web
from pydantic_core import from_json

from tapgate.decisions.buttons import BatchAction, TapAction, valid_request_id
from tapgate.decisions.taps import ANSWER_MAX, BatchTap, Tap, TapOutcome, tap, tap_batch
from tapgate.gate.directory import WEB
from tapgate.server.keys import GATE
from tapgate.server.web_inbox.guard import SESSION, WebError, read_form

__all__ = ["answer", "answer_batch", "answer_selection"]

_ACTIONS: frozenset[str] = frozenset(
    {"approve", "deny", "approve_session", "approve_always", "reply", "dismiss"}
)
_BATCH_ACTIONS: frozenset[str] = frozenset({"approve_all", "deny_all", "approve_all_session"})
_SELECTION_MAX = 200


async def _fields(request: web.Request) -> Mapping[str, Any]:
    """The answer's fields, from a form post or the script's JSON (400 for anything else)."""
    if request.content_type == "application/json":
        try:
            # pydantic's parser, not json.loads: that one returns lone surrogates
            # ("\ud800"), which no store can encode, and recurses until a
            # RecursionError on deep nesting: 500s both. This one refuses them.
            body = from_json(await request.read())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise WebError(400, "bad_request", "Expected a JSON object.")
        return cast(Mapping[str, Any], body)
    if request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await read_form(request)
        return {k: form.getall(k) if k == "ids" else form.get(k) for k in form}
    raise WebError(415, "unsupported_media_type", "Send a form or JSON.")


def _text(fields: Mapping[str, Any], name: str, *, limit: int = 100) -> str | None:
    value = fields.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise WebError(400, "bad_request", f"{name}: expected text up to {limit} characters.")
    return value


def _ident(fields: Mapping[str, Any], name: str) -> str | None:
    """An id field, of the shape of every id tapgate issues (as the chats' buttons check).

    Anything else names no request; left to the store, text holding NUL is a
    PostgreSQL error (a 500) rather than "not found".
    """
    value = _text(fields, name)
    if value is not None and not valid_request_id(value):
        raise WebError(400, "bad_request", f"{name}: not an id tapgate issued.")
    return value


def _reason(fields: Mapping[str, Any]) -> str | None:
    reason = _text(fields, "reason", limit=ANSWER_MAX)
    return reason.strip() or None if reason is not None else None


def _reply(request: web.Request, outcome: TapOutcome, **extra: object) -> web.Response:
    """JSON for the script; a 303 back to the inbox for a form post."""
    if "application/json" not in request.headers.get(hdrs.ACCEPT, ""):
        raise web.HTTPSeeOther("/inbox")
    status = 200 if outcome.kind in ("applied", "partial") else 409  # partial: quorum waits
    body = {"outcome": outcome.kind, "message": outcome.message, **extra}
    return web.json_response(body, status=status)


async def answer(request: web.Request) -> web.Response:
    """``POST /inbox/answer``: one request, one action (a checked "session" box widens approve)."""
    fields = await _fields(request)
    request_id = _ident(fields, "request_id")
    action = _text(fields, "action")
    if request_id is None or action not in _ACTIONS:
        raise WebError(400, "bad_request", "request_id and a known action are required.")
    if action == "approve" and fields.get("session") in ("1", True, "on"):
        action = "approve_session"
    reason = _reason(fields)
    if action == "reply" and reason is None:
        raise WebError(400, "bad_request", "A reply needs its answer.")
    who = request[SESSION].approver
    answer_ = Tap(channel=WEB, user_id=who, action=cast(TapAction, action), request_id=request_id)
    outcome = await tap(request.app[GATE], answer_, reason=reason)
    return _reply(request, outcome, id=request_id)


async def answer_batch(request: web.Request) -> web.Response:
    """``POST /inbox/batch``: "Allow all" / "Deny all" for every open call of one batch."""
    fields = await _fields(request)
    batch_id = _ident(fields, "batch_id")
    action = _text(fields, "action")
    if batch_id is None or action not in _BATCH_ACTIONS:
        raise WebError(400, "bad_request", "batch_id and a known batch action are required.")
    answer_ = BatchTap(
        channel=WEB,
        user_id=request[SESSION].approver,
        action=cast(BatchAction, action),
        batch_id=batch_id,
    )
    outcome = await tap_batch(request.app[GATE], answer_, reason=_reason(fields))
    decided = [r.id for r in outcome.requests if not r.is_pending]
    return _reply(request, outcome, ids=decided)


async def answer_selection(request: web.Request) -> web.Response:
    """``POST /inbox/selection``: allow or deny the selected calls, each its own tap.

    Unlike a batch, a selection may span agents and batches, so each call is
    decided (and may be refused) on its own; the answer lists each outcome.
    """
    fields = await _fields(request)
    ids = fields.get("ids")
    action = _text(fields, "action")
    if not isinstance(ids, list) or not 0 < len(ids) <= _SELECTION_MAX:
        ids = None
    if ids is None or action not in ("approve", "deny") or not all(map(valid_request_id, ids)):
        raise WebError(400, "bad_request", f"ids (1 to {_SELECTION_MAX}) and approve / deny.")
    who, gate, reason = request[SESSION].approver, request.app[GATE], _reason(fields)
    results = []
    for request_id in dict.fromkeys(ids):
        one = Tap(channel=WEB, user_id=who, action=cast(TapAction, action), request_id=request_id)
        outcome = await tap(gate, one, reason=reason)
        results.append({"id": request_id, "outcome": outcome.kind, "message": outcome.message})
    if "application/json" not in request.headers.get(hdrs.ACCEPT, ""):
        raise web.HTTPSeeOther("/inbox")
    applied = sum(r["outcome"] == "applied" for r in results)
    return web.json_response({"applied": applied, "results": results})
