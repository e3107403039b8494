"""Edit, then approve, on a review link's page: the web inbox's rules, in a mail's link.

    GET  /email/review/{token}/edit ─► the link, its pending request, not_editable ─► the form
    HEAD /email/review/{token}/edit ─► the same, without the body
    POST /email/review/{token}/edit ─► Origin ─► ReviewLinks.check_edit ─► the form again, refused
                                                          └► ReviewLinks.decide(edited=...) ─► done

What an edit means is :mod:`tapgate.decisions.edits` (decision
0013-every-answer-narrows), exactly as for the web inbox's "Edit": one
field per argument, a masked value kept unless replaced whole, the same
arguments of the same types; the edited call judged by the policy again
(a ``deny`` refuses it, other approvers or a quorum too), and judged once
more inside the one decision path. Opening the form decides nothing and
uses nothing up (scanners follow a page's links too). A refused edit shows
the form again with the typed texts and the reason (422) and leaves the
link unused; only an edit that may be approved uses the link, once. The
editor is the address the link was sent to, never a field of the form.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from tapgate.channels.email.page import message_page, page
from tapgate.channels.email.render import e
from tapgate.channels.email.review import (
    Refused,
    ReviewPages,
    edit_path,
    html_response,
    read_form,
    review_path,
)
from tapgate.decisions.edits import WHOLE, edit_form, not_editable, typed_text
from tapgate.decisions.review_links import LINK_UNKNOWN, OpenLink
from tapgate.decisions.texts import tool_name
from tapgate.delivery.edit_fields import field_html
from tapgate.gate.models import Request

__all__ = ["ReviewEdits", "edit_page"]

_APPLIED = frozenset({"applied", "partial", "counted"})


class ReviewEdits:
    """The edit form of a review link (routes ``edit`` and ``submit_edit``)."""

    def __init__(self, pages: ReviewPages) -> None:
        self.pages = pages

    async def show(self, request: web.Request) -> web.StreamResponse:
        """The form, prefilled; decides nothing, however often it is fetched."""
        try:
            token, link, found = await self._editable(request)
        except Refused as refused:
            return html_response(
                message_page(refused.message, detail=refused.detail), refused.status
            )
        return html_response(edit_page(found, link, token, {}, {}), 200)

    async def submit(self, request: web.Request) -> web.StreamResponse:
        """Judge the typed edit; refused, the form again; else approve it, once."""
        try:
            return await self._submit(request)
        except Refused as refused:
            return html_response(
                message_page(refused.message, detail=refused.detail), refused.status
            )

    async def _submit(self, request: web.Request) -> web.StreamResponse:
        self.pages.check_origin(request)
        token, link, found = await self._editable(request)
        fields = await read_form(request)
        csrf = fields.get("csrf", "")
        texts: dict[str, str | None] = {  # a field not sent keeps its value
            f.id: typed_text(f, fields[f.id]) for f in edit_form(found) if f.id in fields
        }
        links = self.pages.links
        judged = await links.check_edit(token, csrf, texts)
        if judged is None:
            await self.pages.refuse_form(token)
        if judged.arguments is None:
            return html_response(edit_page(found, link, token, texts, judged.errors), 422)
        outcome = await links.decide(token, csrf, "approve", edited=judged.arguments)
        if outcome is None:  # the nonce was checked a moment ago: the link is gone
            raise Refused(404, LINK_UNKNOWN)
        status = 200 if outcome.kind in _APPLIED else 409
        return html_response(message_page(outcome.message), status)

    async def _editable(self, request: web.Request) -> tuple[str, OpenLink, Request]:
        """The token, its link and its request, when the request can be edited now."""
        token, opened = await self.pages.opened(request)
        if opened.link.batch:
            raise Refused(404, "A batch is answered whole: it has no edit form.")
        found = await self.pages.pending(opened.link.subject)
        why = not_editable(found)
        if why is not None:
            raise Refused(409, why)
        return token, opened, found


def edit_page(
    found: Request,
    opened: OpenLink,
    token: str,
    texts: Mapping[str, str | None],
    errors: Mapping[str, str],
) -> str:
    """The edit form: typed texts kept (a refusal must not lose them), errors by their field."""
    link, whole = opened.link, errors.get(WHOLE)
    alert = f'<p class="error" role="alert">{e(whole)}</p>' if whole else ""
    rows = "".join(field_html(f, texts.get(f.id), errors.get(f.id)) for f in edit_form(found))
    body = (
        f"<h1>Edit {e(tool_name(found))} <small>[{e(found.id[:8])}]</small></h1>"
        f"<p>Answering as <b>{e(link.approver)}</b>, for <b>{e(found.agent)}</b>. The edited "
        "call is judged by the policy again and approved once, with the arguments below; "
        "masked values are kept unless replaced whole. Nothing is decided until you press "
        "the button.</p>"
        f'{alert}<form method="post" action="{e(edit_path(token))}">'
        f'<input type="hidden" name="csrf" value="{e(link.csrf)}">{rows}'
        '<div class="buttons"><button type="submit" class="allow">'
        "Approve with these arguments</button></div></form>"
        f'<p><a href="{e(review_path(token))}">Back to the request</a></p>'
    )
    return page(f"Edit {tool_name(found)}", body)
