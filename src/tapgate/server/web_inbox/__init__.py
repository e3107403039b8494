"""The web inbox: ``/inbox``, served by ``tapgate serve`` (decisions 0014-one-decision-path,
0016-web-identity-from-the-chat).

A signed-in approver's pending requests as inline cards, answered by key or
click through the same core decision path as a chat tap; history, audit
trails, grants and sessions. No build step and no CDN: server-rendered HTML
with a small script and a stylesheet shipped in ``static/``. Sign-in comes
from the chat (:mod:`tapgate.decisions.sign_in`); every route sits behind
:func:`~tapgate.server.web_inbox.guard.web_middleware` (session, CSRF, CSP, no bearer
tokens).
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from tapgate.server.keys import CONFIG
from tapgate.server.web_inbox import answers, edits, history, live, pending, signing
from tapgate.server.web_inbox.guard import PREFIX, web_middleware
from tapgate.server.web_inbox.keys import SHELL_ARGS

__all__ = ["STATIC", "setup_web", "sign_in_url"]

STATIC = Path(__file__).parent / "static"
"""The stylesheet and the script, shipped as package data."""


def sign_in_url(base: str, token: str) -> str:
    """The link a chat sends: ``{server.public_url}/inbox/sign-in?token=…``."""
    return f"{base.rstrip('/')}{PREFIX}/sign-in?token={token}"


def setup_web(app: web.Application) -> None:
    """Add ``/inbox`` and its guard (the sign-ins, ``SIGN_INS``, are made with the gate)."""
    app.middlewares.append(web_middleware())
    spec = app[CONFIG].policy_spec()
    app[SHELL_ARGS] = {t.name: t.shell for t in spec.tools if t.shell}
    r = app.router
    r.add_get(PREFIX, pending.pending_page)
    r.add_get(f"{PREFIX}/queue", pending.queue_fragment)
    r.add_get(f"{PREFIX}/events", live.inbox_events)
    r.add_post(f"{PREFIX}/answer", answers.answer)
    r.add_post(f"{PREFIX}/batch", answers.answer_batch)
    r.add_post(f"{PREFIX}/selection", answers.answer_selection)
    r.add_get(f"{PREFIX}/history", history.history_page)
    r.add_get(f"{PREFIX}/requests/{{request_id}}", history.audit_page)
    r.add_get(f"{PREFIX}/requests/{{id}}/edit", edits.edit_page)
    r.add_post(f"{PREFIX}/requests/{{id}}/edit", edits.submit_edit)
    r.add_get(f"{PREFIX}/grants", history.grants_page)
    r.add_post(f"{PREFIX}/grants/{{grant_id}}/revoke", history.revoke_grant)
    r.add_get(f"{PREFIX}/sign-in", signing.sign_in_page)
    r.add_post(f"{PREFIX}/sign-in", signing.sign_in)
    r.add_post(f"{PREFIX}/sign-out", signing.sign_out)
    r.add_get(f"{PREFIX}/sessions", signing.sessions_page)
    r.add_post(f"{PREFIX}/sessions/{{session_id}}/revoke", signing.revoke_session)
    r.add_static(f"{PREFIX}/static", STATIC, append_version=False)
