"""The review page's routes: ``GET``/``HEAD`` show, only a ``POST`` of the form decides.

    GET  /email/review/{token}  ─► ReviewLinks.open (writes nothing) ─► the page and its form
    HEAD /email/review/{token}  ─► the same, without the body
    POST /email/review/{token}  ─► Origin, nonce ─► ReviewLinks.decide ─► one sentence

Mail scanners, link previews and "Safe Links" rewriters fetch a mail's links
before the person reads it, possibly many times: a fetch must never decide,
use a link up or write an audit line. The form's ``POST`` carries the
link's CSRF nonce (the page shows it; a scanner that does not submit forms
never sees a decision) and, from a browser, an ``Origin`` of this server.
Deciding is the domain's (:mod:`tapgate.decisions.review_links`, then
:mod:`tapgate.decisions.taps`): who answers is the address the link was
sent to, never a field of the form. Bad input (an undecodable form, an
unknown action, a reason too long) is a 400 that changes nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import NoReturn
from urllib.parse import urlsplit

from aiohttp import hdrs, web

from tapgate.channels.contract import Handler
from tapgate.channels.email.page import CSP, batch_page, message_page, request_page
from tapgate.decisions.edits import not_editable
from tapgate.decisions.remember import offer_for
from tapgate.decisions.review_links import LINK_UNKNOWN, LINK_USED, OpenLink, ReviewLinks
from tapgate.decisions.taps import ANSWER_MAX, TapOutcome
from tapgate.decisions.texts import already_message
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.presentation import present
from tapgate.errors import RequestNotFound
from tapgate.gate.batching import read_batch
from tapgate.gate.gate import Gate
from tapgate.gate.models import Request

__all__ = [
    "Refused",
    "ReviewPages",
    "edit_path",
    "html_response",
    "read_form",
    "review_path",
    "sign_in_path",
    "token_of",
]

_log = logging.getLogger("tapgate.channels.email")

_TOKEN = re.compile(r"[A-Za-z0-9_-]{20,100}")
_ACTIONS = frozenset({"approve", "deny", "approve_session", "approve_always", "reply", "dismiss"})
_BATCH_ACTIONS = frozenset({"approve_all", "deny_all", "approve_all_session"})
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # The token is in the URL: it must not travel to another site in a Referer.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "X-Robots-Tag": "noindex",
}
_APPLIED = frozenset({"applied", "partial", "counted"})


def review_path(token: str) -> str:
    """The page of one link, as the mail's URL ends."""
    return f"/email/review/{token}"


def edit_path(token: str) -> str:
    """The link's "Edit, then approve" page."""
    return f"{review_path(token)}/edit"


def sign_in_path(token: str) -> str:
    """Where the page's "Open the web inbox" button posts (:mod:`.sign_in`)."""
    return f"{review_path(token)}/sign-in"


class Refused(Exception):
    """A page's refusal: its status and the sentence shown (nothing was changed)."""

    def __init__(self, status: int, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.status, self.message, self.detail = status, message, detail


class ReviewPages:
    """The email channel's :class:`~tapgate.channels.contract.Receiver`: the review page."""

    def __init__(self, gate: Gate, *, public_url: str | None) -> None:
        self.gate = gate
        self.links = ReviewLinks(gate, channel="email")
        self.public_url = public_url

    def handler(self, route: str) -> Handler:
        """``show`` for GET and HEAD, ``answer`` for POST; ``edit`` and ``submit_edit`` likewise;
        ``sign_in`` (POST only) opens the web inbox."""
        from tapgate.channels.email.edit import ReviewEdits  # they build on this module
        from tapgate.channels.email.sign_in import ReviewSignIn

        edits = ReviewEdits(self)
        return {
            "show": self.show,
            "answer": self.answer,
            "edit": edits.show,
            "submit_edit": edits.submit,
            "sign_in": ReviewSignIn(self).submit,
        }[route]

    async def close(self) -> None:
        """Nothing to stop: the page holds no connection."""

    async def show(self, request: web.Request) -> web.StreamResponse:
        """Render the request (or batch) and its form; never changes anything."""
        try:
            html = await self._show(request)
        except Refused as refused:
            return html_response(
                message_page(refused.message, detail=refused.detail), refused.status
            )
        return html_response(html, 200)

    async def answer(self, request: web.Request) -> web.StreamResponse:
        """Decide, once, as the link's approver; the sentence the tapper is told."""
        try:
            outcome = await self._answer(request)
        except Refused as refused:
            _log.info("review page refused a POST: %s", refused.message)
            return html_response(message_page(refused.message), refused.status)
        status = 200 if outcome.kind in _APPLIED else 409
        return html_response(message_page(outcome.message), status)

    async def _show(self, request: web.Request) -> str:
        token, opened = await self.opened(request)
        return await self._page(opened, token)

    async def _answer(self, request: web.Request) -> TapOutcome:
        token = token_of(request)
        self.check_origin(request)
        fields = await read_form(request)
        action = fields.get("action", "")
        if action not in _ACTIONS | _BATCH_ACTIONS:
            raise Refused(400, "Unknown answer.")
        reason = (fields.get("reason") or "").strip() or None
        if reason is not None and len(reason) > ANSWER_MAX:
            raise Refused(400, f"The reason is longer than {ANSWER_MAX} characters.")
        if action == "reply" and reason is None:
            raise Refused(400, "A reply needs its answer.")
        outcome = await self._decide(token, fields.get("csrf", ""), action, reason)
        if outcome is None:
            await self.refuse_form(token)
        return outcome

    async def _decide(
        self, token: str, csrf: str, action: str, reason: str | None
    ) -> TapOutcome | None:
        try:
            return await self.links.decide(token, csrf, action, reason=reason)
        except ValueError:  # a request's action on a batch's link, or the other way
            raise Refused(400, "Unknown answer.") from None

    async def _page(self, opened: OpenLink, token: str) -> str:
        link = opened.link
        if link.batch:
            return await self._batch_page(opened, token)
        found = await self.pending(link.subject)
        view = present(
            found,
            tool_shell_arg=self._shell_arg(found),
            now=self.gate.clock.now(),
            offer=offer_for(self.gate.policy, found),
        )
        editable = not_editable(found) is None
        return request_page(
            view,
            approver=link.approver,
            csrf=link.csrf,
            action=review_path(token),
            edit=edit_path(token) if editable else None,
            sign_in=_sign_in(opened, token),
        )

    async def opened(self, request: web.Request) -> tuple[str, OpenLink]:
        """The path's token and its link, still able to answer; else the page's refusal."""
        token = token_of(request)
        opened = await self.links.open(token)
        if opened is None:
            raise Refused(404, LINK_UNKNOWN)
        if opened.state == "used":
            link = opened.link
            raise Refused(410, LINK_USED, await self._outcome(link.subject, batch=link.batch))
        return token, opened

    async def pending(self, request_id: str) -> Request:
        """The link's request while it can still be answered; else the page's refusal."""
        try:
            found = await self.gate.get_request(request_id)
        except RequestNotFound:
            raise Refused(404, "This request no longer exists.") from None
        if not found.is_pending or found.expires_at <= self.gate.clock.now():
            status = found.status if not found.is_pending else "expired"
            raise Refused(410, already_message(found, status))
        return found

    async def _batch_page(self, opened: OpenLink, token: str) -> str:
        link = opened.link
        approver = link.approver
        try:
            state = await read_batch(self.gate, link.subject)
        except RequestNotFound:
            raise Refused(404, "This batch no longer exists.") from None
        members = [state.requests[i] for i in state.batch.request_ids if i in state.requests]
        mine = [r for r in members if approver in r.approvers] or members
        now = self.gate.clock.now()
        open_calls = [r.id for r in mine if r.is_pending and r.expires_at > now]
        if not open_calls:
            raise Refused(410, "Every call of this batch is decided already.")
        shell = {r.tool: arg for r in mine if (arg := self._shell_arg(r)) is not None}
        batch = present_batch(mine, tool_shell_args=shell, now=now)
        return batch_page(
            batch,
            approver=approver,
            csrf=link.csrf,
            action=review_path(token),
            open_calls=open_calls,
            sign_in=_sign_in(opened, token),
        )

    async def _outcome(self, subject: str, *, batch: bool) -> str:
        """What became of a used link's request, for its page ("Already approved by ...")."""
        if batch:
            return ""
        try:
            found = await self.gate.get_request(subject)
        except RequestNotFound:
            return ""
        return "" if found.is_pending else already_message(found, found.status)

    def _shell_arg(self, request: Request) -> str | None:
        spec = self.gate.policy.tool_spec(request.tool)
        return None if spec is None else spec.shell

    async def refuse_form(self, token: str) -> NoReturn:
        """Why a posted form did not answer: no such link (any more), or a wrong nonce."""
        if await self.links.open(token) is None:
            raise Refused(404, LINK_UNKNOWN)  # never was, or forgotten after its request ended
        raise Refused(403, "This form is not valid: open the link from the mail again.")

    def check_origin(self, request: web.Request) -> None:
        """Refuse (403) a form a browser posted from another site."""
        if not self.same_origin(request):
            raise Refused(403, "This form did not come from this server.")

    def same_origin(self, request: web.Request) -> bool:
        """A browser's ``Origin`` (when sent) names this server; a form from elsewhere does not."""
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is None:
            return True  # not a browser's cross-site POST (those always send Origin)
        ours = {request.host}
        if self.public_url is not None:
            ours.add(urlsplit(self.public_url).netloc)
        return urlsplit(origin).netloc in ours


def _sign_in(opened: OpenLink, token: str) -> str | None:
    """The page's "Open the web inbox" form, while the link has not signed in yet."""
    return sign_in_path(token) if opened.link.signed_in_at is None else None


def token_of(request: web.Request) -> str:
    token = request.match_info.get("token", "")
    if not _TOKEN.fullmatch(token):
        raise Refused(404, LINK_UNKNOWN)
    return token


async def read_form(request: web.Request) -> Mapping[str, str]:
    """The posted form's text fields, or a 400 (undecodable bytes, a charset, no boundary)."""
    if request.content_type not in ("application/x-www-form-urlencoded", "multipart/form-data"):
        raise Refused(415, "Send the page's form.")
    try:
        form = await request.post()
    except (ValueError, LookupError):
        raise Refused(400, "This form could not be read.") from None
    return {k: v for k, v in form.items() if isinstance(v, str)}


def html_response(text: str, status: int) -> web.Response:
    response = web.Response(text=text, status=status, content_type="text/html")
    response.headers.update(_HEADERS)
    return response
