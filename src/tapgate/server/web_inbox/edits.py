"""The inbox's "Edit": change a call's arguments, then approve it (decision
0013-every-answer-narrows).

What an edit means (the form's fields with secrets masked, reading the typed
texts, the policy's second look, the decision with the edited arguments) is
:mod:`tapgate.decisions.edits`; this module only speaks HTML, as
``webhooks/_slack_edits.py`` speaks Slack:

    GET  /inbox/requests/{id}/edit ─► core.taps.check, core.edits.not_editable ─► the form
    POST /inbox/requests/{id}/edit ─► core.edits.prepare ─► the form again, with the reasons
                                                        └► core.edits.approve_edit ─► /inbox

The form is a plain server-rendered page (no script needed); the tapper is
the session's approver, never a name from the form, and the POST carries
the CSRF token like every other (``guard.py``). A refusal decides nothing and
shows the form again with the reason (422); ``approve_edit`` judges again
inside the one decision path, so a form left open across a config change
cannot approve what the policy now refuses. LINE approvers edit here: LINE
has no dialogs.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from tapgate.decisions.edits import (
    WHOLE,
    approve_edit,
    edit_form,
    not_editable,
    prepare,
    typed_text,
)
from tapgate.decisions.taps import Tap, check
from tapgate.decisions.texts import tool_name
from tapgate.delivery.edit_fields import field_html
from tapgate.gate.directory import WEB
from tapgate.gate.models import Request
from tapgate.server.keys import GATE
from tapgate.server.web_inbox.guard import SESSION, WebError, read_form
from tapgate.server.web_inbox.layout import e, page

__all__ = ["edit_page", "edit_url", "submit_edit"]

_REFUSED = {"not_found": 404, "not_approver": 403}


def edit_url(request_id: str) -> str:
    """Where a card's "Edit" leads (escape it before putting it in HTML)."""
    return f"/inbox/requests/{request_id}/edit"


def _tap(request: web.Request) -> Tap:
    """An approval of the path's request by the session's approver."""
    who = request[SESSION].approver
    return Tap(channel=WEB, user_id=who, action="approve", request_id=request.match_info["id"])


async def _editable(request: web.Request) -> Request:
    """The request, when the session's approver may edit it now; else a refusal (WebError)."""
    may = await check(request.app[GATE], _tap(request))
    if may.kind != "ready" or may.request is None:
        raise WebError(_REFUSED.get(may.kind, 409), may.kind, may.message)
    why = not_editable(may.request)
    if why is not None:
        raise WebError(409, "not_editable", why)
    return may.request


async def edit_page(request: web.Request) -> web.Response:
    """``GET /inbox/requests/{id}/edit``: the form, one field per argument as core gives them."""
    found = await _editable(request)
    return _form_page(request, found, {}, {})


async def submit_edit(request: web.Request) -> web.Response:
    """``POST /inbox/requests/{id}/edit``: judged by core; refused, the form again; else decided."""
    found = await _editable(request)
    form = await read_form(request)
    fields = edit_form(found)
    texts: dict[str, str | None] = {}
    for f in fields:
        value = form.get(f.id)
        if value is not None and not isinstance(value, str):
            raise WebError(400, "bad_request", f"{f.id}: expected text.")
        texts[f.id] = None if value is None else typed_text(f, value)
    gate, answer = request.app[GATE], _tap(request)
    judged = await prepare(gate, answer, texts)
    if judged.arguments is None:
        return _form_page(request, found, texts, judged.errors, status=422)
    outcome = await approve_edit(gate, answer, judged.arguments)
    if outcome.kind != "applied":
        return _form_page(request, found, texts, {WHOLE: outcome.message}, status=409)
    raise web.HTTPSeeOther("/inbox")


def _form_page(
    request: web.Request,
    found: Request,
    texts: Mapping[str, str | None],
    errors: Mapping[str, str],
    *,
    status: int = 200,
) -> web.Response:
    """The edit form: typed texts kept (a refusal must not lose them), errors by their field."""
    session = request[SESSION]
    rid = e(found.id)
    whole = errors.get(WHOLE)
    alert = f'<p class="error" role="alert" id="edit-error">{e(whole)}</p>' if whole else ""
    rows = "".join(field_html(f, texts.get(f.id), errors.get(f.id)) for f in edit_form(found))
    body = (
        f'<h1>Edit {e(tool_name(found))} <span class="sid">{e(found.id[:8])}</span></h1>'
        f"<p>From <b>{e(found.agent)}</b>. The edited call is judged by the policy again and "
        "approved once, with the arguments below; masked values are kept unless replaced "
        "whole.</p>"
        f'{alert}<form method="post" action="{e(edit_url(found.id))}" class="edit-form">'
        f'<input type="hidden" name="csrf" value="{e(session.csrf)}">{rows}'
        '<button type="submit" class="allow">Approve with these arguments</button> '
        f'<a href="/inbox#r-{rid}">Cancel</a></form>'
    )
    html = page("Edit", body, approver=session.approver, csrf=session.csrf, here="pending")
    return web.Response(text=html, content_type="text/html", status=status)
