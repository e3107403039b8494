"""``GET /inbox``: the signed-in approver's pending requests, newest first, grouped by batch.

Only requests this approver may decide are listed (they are one of its
approvers, matched in SQL), and only :data:`PAGE` at a time: a queue of a
thousand costs a page read and a count, and draws the same page as a queue of
fifty (``benchmarks/bench_inbox.py``); "Next" shows the rest. Cards are drawn by
:mod:`tapgate.server.web_inbox.cards` from the chat cards' presentation model, with
the remember buttons the policy offers now (:func:`tapgate.decisions.remember.offer_for`).
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from tapgate.decisions.edits import not_editable
from tapgate.decisions.remember import offer_for
from tapgate.delivery.presentation import ApprovalView, present
from tapgate.delivery.standing import standing
from tapgate.gate.doors import PendingQueue
from tapgate.gate.models import Request
from tapgate.server.keys import GATE
from tapgate.server.web_inbox.cards import batch_html, card_html
from tapgate.server.web_inbox.guard import SESSION
from tapgate.server.web_inbox.keys import SHELL_ARGS
from tapgate.server.web_inbox.layout import e, page

__all__ = ["PAGE", "pending_for", "pending_page", "queue_fragment", "views_of"]

PAGE = 40
"""Requests drawn per page: more than fit on a screen, few enough to draw in milliseconds,
and with the stylesheet and script under 100 KB (a card is about 1.8 KB of HTML)."""


async def pending_for(
    gate: PendingQueue, approver: str, *, start: int = 0
) -> tuple[list[Request], int]:
    """One page of ``approver``'s open requests, newest first, and how many are pending in all.

    Expired requests the heartbeat has not swept yet are left off the page.
    """
    now = gate.clock.now()
    page = await gate.list_requests(status="pending", approver=approver, limit=PAGE, offset=start)
    total = await gate.count_requests(status="pending", approver=approver)
    return [r for r in page if r.expires_at > now], total


def views_of(
    gate: PendingQueue, requests: list[Request], shell_args: Mapping[str, str]
) -> list[ApprovalView]:
    """Each request's presentation, with the remember buttons the policy offers now."""
    now = gate.clock.now()
    return [
        present(r, tool_shell_arg=shell_args.get(r.tool), now=now, offer=offer_for(gate.policy, r))
        for r in requests
    ]


def _groups(requests: list[Request]) -> list[tuple[str | None, list[Request]]]:
    """Batches together (where their newest call is), single requests alone, newest first."""
    groups: dict[str, list[Request]] = {}
    for r in requests:
        groups.setdefault(r.batch_id or f"\0{r.id}", []).append(r)
    return [(None if key.startswith("\0") else key, members) for key, members in groups.items()]


async def _queue(request: web.Request) -> tuple[str, int, int]:
    """The cards of one page (HTML), how many are pending in all, and the page's start."""
    session = request[SESSION]
    gate = request.app[GATE]
    start = _start(request)
    shown, total = await pending_for(gate, session.approver, start=start)
    shell: dict[str, str] = request.app[SHELL_ARGS]
    views = {v.request_id: v for v in views_of(gate, shown, shell)}
    notes = {r.id: standing(r) for r in shown}
    editable = {r.id for r in shown if not_editable(r) is None}
    parts = []
    for batch_id, members in _groups(shown):
        member_views = [views[r.id] for r in members]
        if batch_id is None:
            one = members[0].id
            parts.append(
                card_html(
                    member_views[0], csrf=session.csrf, note=notes[one], editable=one in editable
                )
            )
        else:
            parts.append(
                batch_html(
                    member_views, batch_id, csrf=session.csrf, notes=notes, editable=editable
                )
            )
    return "".join(parts), total, start


_LAST_START = 2**31 - 1
"""Past any queue, and an ``OFFSET`` both stores take: SQLite refuses more than 2**63 - 1
(an ``OverflowError``, a 500), PostgreSQL's ``bigint`` likewise."""


def _start(request: web.Request) -> int:
    """The page's first request (``?from=``), 0 for anything that is not a count."""
    try:
        return min(max(0, int(request.query.get("from", "0"))), _LAST_START)
    except ValueError:
        return 0


def _count(total: int) -> str:
    return f"{total} pending for you" if total else "Nothing waits for you."


async def queue_fragment(request: web.Request) -> web.Response:
    """``GET /inbox/queue``: the cards alone, for the script to redraw after a new request.

    ``?ids=1`` answers only the page's request ids and the total (JSON): what
    the script asks when its event stream (re)connects, to redraw only if
    something changed while nobody listened.
    """
    if request.query.get("ids") == "1":
        session, gate = request[SESSION], request.app[GATE]
        start = _start(request)
        shown, total = await pending_for(gate, session.approver, start=start)
        return web.json_response({"ids": [r.id for r in shown], "total": total})
    cards, total, _ = await _queue(request)
    return web.Response(
        text=cards, content_type="text/html", headers={"X-Tapgate-Total": str(total)}
    )


async def pending_page(request: web.Request) -> web.Response:
    """The inbox itself: a help line, the selection bar, the cards (see the module docstring)."""
    session = request[SESSION]
    cards, total, start = await _queue(request)
    more = ""
    if start + PAGE < total:
        more = f'<p class="more-link"><a href="/inbox?from={start + PAGE}">Next {PAGE}</a></p>'
    body = (
        f'<h1>Pending <span class="count" id="count" data-total="{total}">{e(_count(total))}</span>'
        '</h1><p id="status" class="status" role="status" aria-live="polite"></p>'
        '<p class="keys" id="keys-hint">Return allow · Esc deny · Alt+Return allow all · '
        "Alt+Esc deny all · j/k move · r reason · e edit · x select · ? all keys</p>"
        '<div class="selection" id="selection" hidden><span id="selected">0 selected</span>'
        '<button type="button" id="allow-selected" class="allow">Allow selected</button>'
        '<button type="button" id="deny-selected" class="deny">Deny selected</button></div>'
        f'<div id="queue" class="queue" data-from="{start}">{cards}</div>{more}'
        f"{_KEYS_DIALOG}"
    )
    html = page("Pending", body, approver=session.approver, csrf=session.csrf, here="pending")
    return web.Response(text=html, content_type="text/html")


_KEYS = (
    ("Return", "allow the focused call (with the session box, for the session)"),
    ("Esc", "deny the focused call (with the reason typed, if any)"),
    ("Alt/Option + Return", "allow every open call of the focused call's batch"),
    ("Alt/Option + Esc", "deny every open call of the focused call's batch"),
    ("j / ↓", "next call"),
    ("k / ↑", "previous call"),
    ("r", "type a reason for the focused call (Return in it denies)"),
    ("s", "tick or clear 'allow for this session'"),
    ("e", "edit the focused call's arguments, then approve (where the card offers Edit)"),
    ("x", "select the focused call; Allow / Deny selected act on all selected"),
    ("?", "this list"),
)
_KEYS_DIALOG = (
    '<dialog id="keys" aria-labelledby="keys-title"><h2 id="keys-title">Keys</h2><dl>'
    + "".join(f"<dt><kbd>{e(k)}</kbd></dt><dd>{e(v)}</dd>" for k, v in _KEYS)
    + '</dl><form method="dialog"><button>Close</button></form></dialog>'
)
