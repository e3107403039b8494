"""One click from a review page into the web inbox, signed in as the link's approver.

    POST /email/review/{token}/sign-in ─► Origin, nonce ─► ReviewLinks.sign_in ─► 303 /inbox

The review page's "Open the web inbox" button posts the page's CSRF nonce
here. Only that ``POST`` signs in (a ``GET`` of any review URL never does:
scanners fetch them), only while the link can still decide, and once per
link; the session is the approver's the link was mailed to, whoever holds
it. The session itself is the web inbox's (:mod:`tapgate.decisions.sign_in`:
the same cookie, attributes and life as a sign-in from a chat's link).

The inbox's session cookie is sent to ``/inbox`` only, so this page cannot
see whether the browser is already signed in: pressing the button (which
names the approver) signs this browser in as that approver.
"""

from __future__ import annotations

from aiohttp import hdrs, web

from tapgate.channels.email.page import message_page
from tapgate.channels.email.review import Refused, ReviewPages, html_response, read_form, token_of
from tapgate.decisions.sign_in import INBOX_PATH, SESSION_COOKIE, cookie_options

__all__ = ["ReviewSignIn"]


class ReviewSignIn:
    """The ``sign_in`` route of a review link."""

    def __init__(self, pages: ReviewPages) -> None:
        self.pages = pages

    async def submit(self, request: web.Request) -> web.StreamResponse:
        """Sign in and go to the inbox; a refusal page (nothing changed) otherwise."""
        try:
            return await self._submit(request)
        except Refused as refused:
            return html_response(message_page(refused.message), refused.status)

    async def _submit(self, request: web.Request) -> web.StreamResponse:
        token = token_of(request)
        self.pages.check_origin(request)
        fields = await read_form(request)
        links = self.pages.links
        agent = request.headers.get(hdrs.USER_AGENT, "")
        signed = await links.sign_in(token, fields.get("csrf", ""), user_agent=agent)
        if signed is None:
            await self.pages.refuse_form(token)
        if isinstance(signed, str):
            raise Refused(410, signed)
        response = web.Response(status=303, headers={hdrs.LOCATION: INBOX_PATH})
        options = cookie_options(self.pages.public_url)
        response.set_cookie(SESSION_COOKIE, signed.secret, max_age=signed.max_age, **options)  # type: ignore[arg-type]
        return response
