"""Who is at the web inbox, and what every ``/inbox`` response carries.

One middleware for everything under ``/inbox``:

- **no agent tokens**: a request with an ``Authorization`` header is refused
  (403) before anything else, valid token or not. Agents never resolve
  anything (decision 0006-identity-from-config), so no bearer credential opens the inbox;
- **a session or nothing**: every path but the sign-in page and the static
  files needs the session cookie of a live session (401 otherwise: a page
  that says to ask the chat, or ``tapgate inbox-link``, for a link);
- **CSRF**: every POST carries the session's CSRF token (form field ``csrf``
  or header ``X-CSRF-Token``) and, when the browser sends one, an ``Origin``
  of this server; anything else is a 403 that changes nothing. The cookie is
  ``SameSite=Strict`` as well: two locks, since one of them can be misconfigured
  by a proxy;
- **headers**: a strict Content-Security-Policy (own origin only, no inline
  script or style), no framing, no sniffing, no referrer to other sites, no caching.
"""

from __future__ import annotations

from collections.abc import Awaitable
from urllib.parse import urlsplit

from aiohttp import hdrs, web
from aiohttp.typedefs import Middleware
from aiohttp.web_request import FileField
from multidict import MultiDictProxy

from tapgate.decisions.sign_in import INBOX_PATH, SESSION_COOKIE, WebSession, csrf_matches
from tapgate.decisions.sign_in import cookie_options as session_cookie_options
from tapgate.server.api.middleware import Handler
from tapgate.server.keys import CONFIG, SIGN_INS
from tapgate.server.web_inbox.layout import message_page

__all__ = [
    "COOKIE",
    "PREFIX",
    "SESSION",
    "WebError",
    "cookie_options",
    "read_form",
    "web_middleware",
]

PREFIX = INBOX_PATH
COOKIE = SESSION_COOKIE
SESSION = web.RequestKey("tapgate.web_session", WebSession)
"""The signed-in approver's session, set on every ``/inbox`` request but the public ones."""

_PUBLIC = (f"{PREFIX}/sign-in", f"{PREFIX}/static/")
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",  # "no-referrer" makes Chromium send "Origin: null"
    "Cross-Origin-Opener-Policy": "same-origin",
}


class WebError(Exception):
    """A refusal on ``/inbox``: its status and the sentence the person reads."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def cookie_options(request: web.Request) -> dict[str, object]:
    """``HttpOnly``, ``SameSite=Strict``, path ``/inbox``; ``Secure`` behind an https public URL."""
    public = request.app[CONFIG].server.public_url
    return session_cookie_options(None if public is None else str(public))


def _is_public(path: str) -> bool:
    return path == _PUBLIC[0] or path.startswith(_PUBLIC[1])


def _same_origin(request: web.Request) -> bool:
    """A browser's ``Origin`` (when sent) names this server: a form posted from elsewhere is not.

    This server is the ``Host`` it was asked for, or ``server.public_url``'s
    host (a reverse proxy may rewrite ``Host``).
    """
    origin = request.headers.get(hdrs.ORIGIN)
    if origin is None:
        return True  # not a browser's cross-site POST (those always send Origin)
    public = request.app[CONFIG].server.public_url
    ours = {request.host} | ({urlsplit(str(public)).netloc} if public is not None else set())
    return urlsplit(origin).netloc in ours


async def read_form(request: web.Request) -> MultiDictProxy[str | bytes | bytearray | FileField]:
    """The posted form, or a 400 that changes nothing.

    aiohttp's ``post()`` raises on what a client chooses to send: bytes that
    are not UTF-8 (``UnicodeDecodeError``), an unknown ``charset``
    (``LookupError``), multipart without its boundary (``ValueError``): a 500
    each, unanswered, the public sign-in form included.
    """
    try:
        return await request.post()
    except (ValueError, LookupError):
        raise WebError(400, "bad_request", "This form could not be read.") from None


async def _csrf_token(request: web.Request) -> str | None:
    header = request.headers.get("X-CSRF-Token")
    if header is not None:
        return header
    if request.content_type == "application/x-www-form-urlencoded":
        value = (await read_form(request)).get("csrf")
        return value if isinstance(value, str) else None
    return None


async def _admit(request: web.Request) -> None:
    """Refuse (``WebError``) or let in: no bearer token, same origin, a session, its CSRF token."""
    if hdrs.AUTHORIZATION in request.headers:
        raise WebError(403, "no_bearer", "Agent tokens never open the inbox.")
    if request.method == "POST" and not _same_origin(request):
        raise WebError(403, "csrf", "This form did not come from the inbox.")
    if _is_public(request.path):
        return
    session = await request.app[SIGN_INS].session(request.cookies.get(COOKIE))
    if session is None:
        raise WebError(
            401,
            "signed_out",
            "Signed out: ask the chat for a new link, or run tapgate inbox-link --as NAME.",
        )
    if request.method == "POST" and not csrf_matches(session, await _csrf_token(request)):
        raise WebError(403, "csrf", "Missing or wrong CSRF token: reload the inbox.")
    request[SESSION] = session


async def _guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        await _admit(request)
        response = await handler(request)
    except WebError as exc:
        response = _refusal(request, exc)
    except web.HTTPException as exc:
        if exc.status < 400:
            exc.headers.update(_HEADERS)
            raise
        response = _refusal(request, WebError(exc.status, f"http_{exc.status}", exc.reason))
    response.headers.update(_HEADERS)
    response.headers.setdefault(hdrs.CACHE_CONTROL, "no-store")
    return response


def _refusal(request: web.Request, error: WebError) -> web.Response:
    """JSON for the inbox's script (and anyone sending JSON), a short page for a browser."""
    body = {"error": error.code, "message": error.message}
    wants_json = "application/json" in request.headers.get(hdrs.ACCEPT, "")
    if wants_json or request.path.startswith(f"{PREFIX}/api/"):
        return web.json_response(body, status=error.status)
    return web.Response(
        text=message_page(error.message), status=error.status, content_type="text/html"
    )


def web_middleware() -> Middleware:
    """The ``/inbox`` guard (see the module docstring); other paths pass straight through."""

    @web.middleware
    def middleware(request: web.Request, handler: Handler) -> Awaitable[web.StreamResponse]:
        if request.path != PREFIX and not request.path.startswith(PREFIX + "/"):
            return handler(request)
        return _guarded(request, handler)

    return middleware
