"""The inbox's page shell and the one escaping helper every page uses.

Every value that reaches HTML goes through :func:`e` (``html.escape`` with
quotes), whoever wrote it: tool arguments are the model's text, and an
approver's name or a reason is text too. There is no template engine and no
``Markup`` type to forget; pages are small functions that build strings from
escaped parts. No inline script or style exists anywhere (the CSP forbids
both): behaviour is ``static/inbox.js``, looks are ``static/inbox.css``.
"""

from __future__ import annotations

import html

__all__ = ["e", "message_page", "page"]

_NAV = (
    ("pending", "/inbox", "Pending"),
    ("history", "/inbox/history", "History"),
    ("grants", "/inbox/grants", "Grants"),
    ("sessions", "/inbox/sessions", "Sessions"),
)


def e(text: object) -> str:
    """``text`` safe inside HTML content and quoted attributes."""
    return html.escape(str(text), quote=True)


def page(
    title: str, body: str, *, approver: str | None = None, csrf: str | None = None, here: str = ""
) -> str:
    """A whole page: head (CSS, deferred script, CSRF token), nav, ``body`` (escaped already)."""
    nav = ""
    if approver is not None and csrf is not None:
        links = "".join(
            f'<a href="{href}"{" aria-current=page" if key == here else ""}>{label}</a>'
            for key, href, label in _NAV
        )
        nav = (
            f'<header class="top"><nav aria-label="Inbox">{links}</nav>'
            f'<span class="who">Signed in as <b>{e(approver)}</b></span>'
            f'<form method="post" action="/inbox/sign-out" class="inline">'
            f'<input type="hidden" name="csrf" value="{e(csrf)}">'
            f'<button type="submit">Sign out</button></form></header>'
        )
    meta = f'<meta name="csrf-token" content="{e(csrf)}">' if csrf else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · tapgate</title>{meta}"
        '<link rel="icon" href="/inbox/static/favicon.svg" type="image/svg+xml">'
        '<link rel="stylesheet" href="/inbox/static/inbox.css">'
        '<script src="/inbox/static/inbox.js" defer></script></head>'
        f"<body>{nav}<main id=main>{body}</main></body></html>"
    )


def message_page(message: str) -> str:
    """A page with one sentence (refusals, sign-out): no nav, nothing to act on."""
    return page("tapgate", f'<p class="message" role="alert">{e(message)}</p>')
