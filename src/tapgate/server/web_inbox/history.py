"""History, one request's audit trail, and the approver's own grants with Revoke.

History lists the decided requests this approver was asked about: outcome,
who, when, reason, filterable by agent, tool, outcome and time (query
parameters, so a filtered view is a link). The audit trail of one request is
the audit log's lines for it, as written by the database. Grants are the
ones the approver made ("session", "always"); revoking goes through the gate
like ``tapgate grants revoke`` and is refused for anyone else's grant.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, get_args

from aiohttp import web

from tapgate.decisions.remember import covers
from tapgate.decisions.texts import GRANT_GONE, NOT_GRANT_OWNER
from tapgate.errors import RequestNotFound
from tapgate.gate.models import Request, RequestStatus
from tapgate.policy.masking import clean, clean_name, mask_arguments
from tapgate.server.keys import GATE
from tapgate.server.web_inbox.guard import SESSION, WebError
from tapgate.server.web_inbox.layout import e, page

__all__ = ["audit_page", "grants_page", "history_page", "revoke_grant"]

_DECIDED = tuple(s for s in get_args(RequestStatus) if s != "pending")
_SINCE = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7)}
_LIMIT = 200


def _when(at: datetime | None) -> str:
    return "" if at is None else at.strftime("%Y-%m-%d %H:%M:%S UTC")


def _select(name: str, label: str, options: tuple[str, ...], chosen: str) -> str:
    opts = "".join(
        f'<option value="{e(o)}"{" selected" if o == chosen else ""}>{e(o or "any")}</option>'
        for o in ("", *options)
    )
    return f'<label>{e(label)} <select name="{name}">{opts}</select></label>'


async def history_page(request: web.Request) -> web.Response:
    """``GET /inbox/history?agent=&tool=&outcome=&since=``: decided requests, newest first."""
    session = request[SESSION]
    gate = request.app[GATE]
    q = request.query
    agent, tool = q.get("agent") or None, q.get("tool") or None
    outcome = q.get("outcome", "")
    since = q.get("since", "")
    statuses = [outcome] if outcome in _DECIDED else list(_DECIDED)
    found: list[Request] = []
    for status in statuses:
        found += await gate.list_requests(status=status, agent=agent, tool=tool, limit=_LIMIT)  # type: ignore[arg-type]
    cutoff = gate.clock.now() - _SINCE[since] if since in _SINCE else None
    mine = [
        r
        for r in found
        if session.approver in r.approvers
        and (cutoff is None or (r.resolved_at or r.expires_at) >= cutoff)
    ]
    mine.sort(key=lambda r: r.resolved_at or r.expires_at, reverse=True)
    rows = "".join(
        f'<tr class="h-{e(r.status)}">'
        f'<td><a href="/inbox/requests/{e(r.id)}">{e(r.id[:8])}</a></td>'
        f"<td>{e(r.agent)}</td><td>{e(clean_name(r.tool))}</td><td>{e(r.status)}"
        f"{' (' + e(r.scope) + ')' if r.scope and r.scope != 'once' else ''}"
        f"{' · edited' if r.edited_arguments is not None else ''}</td>"
        f"<td>{e(r.resolved_by or '')}</td><td>{e(_when(r.resolved_at))}</td>"
        f"<td>{e(clean(r.resolution_reason or ''))}</td></tr>"
        for r in mine[:_LIMIT]
    )
    filters = (
        '<form method="get" action="/inbox/history" class="filters">'
        f'<label>Agent <input name="agent" value="{e(agent or "")}"></label>'
        f'<label>Tool <input name="tool" value="{e(tool or "")}"></label>'
        f"{_select('outcome', 'Outcome', _DECIDED, outcome)}"
        f"{_select('since', 'Since', tuple(_SINCE), since)}"
        '<button type="submit">Filter</button></form>'
    )
    body = (
        f"<h1>History</h1>{filters}<table class=list id=history><thead><tr><th>Request</th>"
        "<th>Agent</th><th>Tool</th><th>Outcome</th><th>By</th><th>When</th><th>Reason</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>"
    )
    html = page("History", body, approver=session.approver, csrf=session.csrf, here="history")
    return web.Response(text=html, content_type="text/html")


async def audit_page(request: web.Request) -> web.Response:
    """``GET /inbox/requests/{id}``: one request's arguments and its audit trail."""
    session = request[SESSION]
    gate = request.app[GATE]
    try:
        found = await gate.get_request(request.match_info["request_id"])
    except RequestNotFound:
        raise WebError(404, "not_found", "No such request.") from None
    if session.approver not in found.approvers:
        raise WebError(404, "not_found", "No such request.")
    lines = await gate.audit_log(request_id=found.id)
    rows = "".join(
        f"<tr><td>{e(_when(a.at))}</td><td>{e(a.event)}</td><td>{e(a.actor)}</td>"
        f"<td><code>{e(json.dumps(dict(a.detail), sort_keys=True, default=str))}</code></td></tr>"
        for a in lines
    )
    args = _json(found.arguments)
    edited = ""
    if found.edited_arguments is not None:
        edited = (
            "<h2>Approved with edited arguments</h2>"
            f'<pre class="body json" id="edited">{e(_json(found.edited_arguments))}</pre>'
        )
    body = (
        f"<h1>{e(clean_name(found.tool))} <span class=sid>{e(found.id)}</span></h1>"
        f"<p>{e(found.agent)} · {e(found.status)}"
        f"{' by ' + e(found.resolved_by) if found.resolved_by else ''}</p>"
        f'<pre class="body json">{e(args)}</pre>{edited}<h2>Audit trail</h2>'
        "<table class=list id=audit><thead><tr><th>At</th><th>Event</th><th>Actor</th>"
        f"<th>Detail</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    html = page("Request", body, approver=session.approver, csrf=session.csrf, here="history")
    return web.Response(text=html, content_type="text/html")


def _json(arguments: Mapping[str, Any]) -> str:
    """Arguments as the page shows them: masked (secrets never reach a page), pretty JSON."""
    return json.dumps(mask_arguments(arguments), indent=2, sort_keys=True, default=str)


async def grants_page(request: web.Request) -> web.Response:
    """``GET /inbox/grants``: the active grants this approver made, each with Revoke.

    A session name is the agent's text: shown as the card showed it (zero-width
    characters as ``⟨U+200B⟩``), or two sessions that read alike look the same.
    """
    session = request[SESSION]
    grants = [g for g in await request.app[GATE].grants() if g.created_by == session.approver]
    rows = "".join(
        f"<tr><td>{e(g.scope)}</td><td>{e(g.agent)}</td><td>{e(clean_name(g.session or ''))}</td>"
        f"<td>{e(covers(g.tool, g.fingerprint))}</td><td>{e(_when(g.expires_at) or 'never')}</td>"
        f'<td><form method="post" action="/inbox/grants/{e(g.id)}/revoke">'
        f'<input type="hidden" name="csrf" value="{e(session.csrf)}">'
        '<button type="submit" class="deny">Revoke</button></form></td></tr>'
        for g in grants
    )
    body = (
        "<h1>Your grants</h1><table class=list id=grants><thead><tr><th>Scope</th><th>Agent</th>"
        "<th>Session</th><th>Covers</th><th>Expires</th><th></th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    html = page("Grants", body, approver=session.approver, csrf=session.csrf, here="grants")
    return web.Response(text=html, content_type="text/html")


async def revoke_grant(request: web.Request) -> web.Response:
    """Revoke one of the approver's own grants; another's is refused and stays."""
    session = request[SESSION]
    gate = request.app[GATE]
    grant_id = request.match_info["grant_id"]
    grant = next((g for g in await gate.grants() if g.id == grant_id), None)
    if grant is None:
        raise WebError(404, "not_found", GRANT_GONE)
    if grant.created_by != session.approver:
        raise WebError(403, "not_owner", NOT_GRANT_OWNER)
    if not await gate.revoke_grant(grant_id, by=session.approver):
        raise WebError(404, "not_found", GRANT_GONE)
    raise web.HTTPSeeOther("/inbox/grants")
