"""Sign-in, sign-out and the approver's sessions (decision 0016-web-identity-from-the-chat).

``GET /inbox/sign-in?token=…`` only *shows* a "Sign in as alice" button:
chat apps fetch links to draw previews, and a GET that used the token would
let a preview bot burn (or worse, take) the sign-in. The button posts the
token back with a one-time value that must match a cookie set by that page
(so another site cannot sign a browser in as someone else), and the post
exchanges the token for a session cookie in one compare-and-set.

A browser already signed in as another approver is refused and the link
stays unused: one browser, one approver, and no silent switch of identity.
"""

from __future__ import annotations

import secrets

from aiohttp import web

from tapgate.decisions.sign_in import same_secret
from tapgate.server.keys import SIGN_INS
from tapgate.server.web_inbox.guard import COOKIE, SESSION, WebError, cookie_options, read_form
from tapgate.server.web_inbox.layout import e, message_page, page

__all__ = [
    "LINK_GONE",
    "NEW_LINK",
    "SIGNED_OUT",
    "revoke_session",
    "sessions_page",
    "sign_in",
    "sign_in_page",
    "sign_out",
]

_PRE = "tapgate_pre"
NEW_LINK = "ask the chat for a new link, or run tapgate inbox-link --as NAME where tapgate runs"
"""Where a link comes from: a chat, or the server's shell when there is no chat."""
LINK_GONE = f"This sign-in link was used or has expired: {NEW_LINK}."
SIGNED_OUT = f"Signed out. To come back, {NEW_LINK}."


def _html(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/html")


async def _signed_in_as(request: web.Request) -> str | None:
    current = await request.app[SIGN_INS].session(request.cookies.get(COOKIE))
    return None if current is None else current.approver


def _other_approver(current: str, owner: str) -> str:
    return f"This browser is signed in as {current}. Sign out before using {owner}'s link."


async def sign_in_page(request: web.Request) -> web.Response:
    """The confirmation page of a link (nothing is used or changed by showing it)."""
    token = request.query.get("token", "")
    owner = await request.app[SIGN_INS].link_owner(token) if 0 < len(token) <= 100 else None
    if owner is None:
        return _html(message_page(LINK_GONE), 410)
    current = await _signed_in_as(request)
    if current is not None and current != owner:
        return _html(message_page(_other_approver(current, owner)), 409)
    pre = secrets.token_urlsafe(16)
    body = (
        f"<h1>Sign in to tapgate</h1><p>Open the inbox as <b>{e(owner)}</b>.</p>"
        '<form method="post" action="/inbox/sign-in">'
        f'<input type="hidden" name="token" value="{e(token)}">'
        f'<input type="hidden" name="pre" value="{e(pre)}">'
        '<button type="submit" class="allow" autofocus>Sign in</button></form>'
    )
    response = _html(page("Sign in", body))
    options = {**cookie_options(request), "path": "/inbox/sign-in", "max_age": 600}
    response.set_cookie(_PRE, pre, **options)  # type: ignore[arg-type]
    return response


async def sign_in(request: web.Request) -> web.Response:
    """Exchange the link for a session cookie, once; refused without any change otherwise."""
    form = await read_form(request)
    token, pre = form.get("token"), form.get("pre")
    if not isinstance(token, str) or not isinstance(pre, str) or not 0 < len(token) <= 100:
        raise WebError(400, "bad_request", "This sign-in form is incomplete.")
    expected = request.cookies.get(_PRE, "")
    if not expected or not same_secret(expected, pre):
        raise WebError(403, "csrf", "Open the sign-in link again in this browser.")
    sign_ins = request.app[SIGN_INS]
    current = await _signed_in_as(request)
    owner = await sign_ins.link_owner(token)
    if owner is None:
        return _html(message_page(LINK_GONE), 410)
    if current is not None and current != owner:
        return _html(message_page(_other_approver(current, owner)), 409)
    opened = await sign_ins.exchange(token, user_agent=request.headers.get("User-Agent", ""))
    if opened is None:
        return _html(message_page(LINK_GONE), 410)
    response = web.HTTPSeeOther("/inbox")
    response.set_cookie(COOKIE, opened.secret, max_age=opened.max_age, **cookie_options(request))  # type: ignore[arg-type]
    response.del_cookie(_PRE, path="/inbox/sign-in")
    raise response


async def sign_out(request: web.Request) -> web.Response:
    """End this browser's session for good (a replayed cookie opens nothing after this)."""
    session = request[SESSION]
    await request.app[SIGN_INS].revoke(session.id, approver=session.approver)
    response = _html(message_page(SIGNED_OUT))
    response.del_cookie(COOKIE, path="/inbox")
    return response


async def sessions_page(request: web.Request) -> web.Response:
    """Every live session of the signed-in approver, each with Revoke."""
    session = request[SESSION]
    rows = []
    for s in await request.app[SIGN_INS].sessions_of(session.approver):
        this = " (this browser)" if s.id == session.id else ""
        rows.append(
            f"<tr><td>{e(s.created_at.strftime('%Y-%m-%d %H:%M UTC'))}{this}</td>"
            f"<td>{e(s.via)}</td><td>{e(s.user_agent[:80])}</td>"
            f"<td>{e(s.expires_at.strftime('%Y-%m-%d %H:%M UTC'))}</td>"
            f'<td><form method="post" action="/inbox/sessions/{e(s.id)}/revoke">'
            f'<input type="hidden" name="csrf" value="{e(session.csrf)}">'
            '<button type="submit" class="deny">Revoke</button></form></td></tr>'
        )
    body = (
        "<h1>Sessions</h1><table class=list><thead><tr><th>Signed in</th><th>Link from</th>"
        f"<th>Browser</th><th>Ends</th><th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    html = page("Sessions", body, approver=session.approver, csrf=session.csrf, here="sessions")
    return _html(html)


async def revoke_session(request: web.Request) -> web.Response:
    """End one of the approver's own sessions (another's id is refused: nothing changes)."""
    session = request[SESSION]
    target = request.match_info["session_id"]
    if not await request.app[SIGN_INS].revoke(target, approver=session.approver):
        raise WebError(404, "not_found", "No such session of yours.")
    if target == session.id:
        response = _html(message_page(SIGNED_OUT))
        response.del_cookie(COOKIE, path="/inbox")
        return response
    raise web.HTTPSeeOther("/inbox/sessions")
