"""The review page's HTML: the request (or batch) a mail links to, and the form that answers it.

Server-rendered, no script (the page works without JavaScript, and a mail
link opened on a phone gets a viewport and buttons a thumb can hit). The
style is one ``<style>`` element allowed by its hash in the page's
Content-Security-Policy; nothing else inline, nothing from elsewhere.
Every value goes through :func:`~tapgate.channels.email.render.e`.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from tapgate.channels.email.render import call_html, e
from tapgate.decisions.taps import ANSWER_MAX
from tapgate.delivery.batch_view import BatchView
from tapgate.delivery.presentation import ApprovalView

__all__ = ["CSP", "batch_page", "message_page", "page", "request_page", "sign_in_form"]

_STYLE = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;"
    "max-width:760px;padding:12px;line-height:1.4}"
    "pre{white-space:pre-wrap;word-break:break-word;background:#f4f4f4;padding:8px;"
    "border-radius:4px;max-height:70vh;overflow:auto}"
    "dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}"
    "dt{font-weight:600}dd{margin:0;word-break:break-word}"
    ".card{border:1px solid #ccc;border-radius:6px;padding:8px 12px;margin:12px 0}"
    ".risk-destructive{border-color:#d1242f}"
    "textarea{width:100%;box-sizing:border-box;min-height:4em;font:inherit}"
    ".buttons{display:flex;flex-wrap:wrap;gap:8px;margin-top:8px}"
    "button{font:inherit;padding:12px 18px;border-radius:6px;border:1px solid #888;"
    "min-width:44px;min-height:44px}"
    ".allow{background:#1a7f37;color:#fff}.deny{background:#d1242f;color:#fff}"
    ".message{font-size:1.2em}"
    ".error{color:#d1242f;font-weight:600}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
CSP = (
    f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
"""The page's policy: no script at all, only its own style, forms posted only here."""


def page(title: str, body: str) -> str:
    """A whole page around ``body`` (already escaped): the viewport, the style its CSP allows."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="robots" content="noindex">'
        f"<title>{e(title)} · tapgate</title><style>{_STYLE}</style></head>"
        f"<body><main>{body}</main></body></html>"
    )


def message_page(message: str, *, detail: str = "") -> str:
    """One sentence (a refusal, an outcome): nothing to act on."""
    extra = f"<p>{e(detail)}</p>" if detail else ""
    return page("tapgate", f'<p class="message" role="alert">{e(message)}</p>{extra}')


def _hidden(csrf: str) -> str:
    return f'<input type="hidden" name="csrf" value="{e(csrf)}">'


def _reason(label: str, *, required: bool = False) -> str:
    return (
        f'<p><label for="reason">{e(label)}</label>'
        f'<textarea id="reason" name="reason" maxlength="{ANSWER_MAX}"'
        f"{' required' if required else ''}></textarea></p>"
    )


def _button(action: str, label: str, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f'<button type="submit" name="action" value="{action}"{attr}>{e(label)}</button>'


def request_page(
    view: ApprovalView,
    *,
    approver: str,
    csrf: str,
    action: str,
    edit: str | None = None,
    sign_in: str | None = None,
) -> str:
    """A pending request and its form: approve (for the session, always), deny with a reason.

    ``edit``: where "Edit, then approve" leads, when the request can be edited;
    ``sign_in``: where "Open the web inbox" posts (:func:`sign_in_form`).
    """
    if view.is_question:
        buttons = _button("reply", "Reply", "allow") + _button("dismiss", "Dismiss", "deny")
        form_body = _reason("Your answer") + f'<div class="buttons">{buttons}</div>'
    else:
        buttons = _button("approve", "Approve", "allow")
        if view.can_allow_session:
            buttons += _button("approve_session", "Allow for this session")
        if view.can_allow_always:
            buttons += _button("approve_always", "Always allow")
        buttons += _button("deny", "Deny", "deny")
        covers = "".join(
            f"<p><small>{e(c)}</small></p>" for c in (view.session_covers, view.always_covers) if c
        )
        edit_link = f'<p><a href="{e(edit)}">Edit, then approve</a></p>' if edit else ""
        form_body = (
            _reason("Reason (optional; sent to the agent with a deny)")
            + f'<div class="buttons">{buttons}</div>{covers}{edit_link}'
        )
    body = (
        f"<h1>Review request</h1><p>Answering as <b>{e(approver)}</b>. Nothing is decided "
        "until you press a button.</p>"
        f"{call_html(view, page=True)}"
        f'<form method="post" action="{e(action)}">{_hidden(csrf)}{form_body}</form>'
        f"{sign_in_form(sign_in, approver=approver, csrf=csrf)}"
    )
    return page(f"Review {view.tool}", body)


def batch_page(
    batch: BatchView,
    *,
    approver: str,
    csrf: str,
    action: str,
    open_calls: Sequence[str],
    sign_in: str | None = None,
) -> str:
    """A batch's calls and one form for all its open calls (approve all, deny all)."""
    buttons = _button("approve_all", "Approve all", "allow")
    if batch.can_allow_session:
        buttons += _button("approve_all_session", "Allow all for this session")
    buttons += _button("deny_all", "Deny all", "deny")
    calls = "".join(call_html(c.view, outcome=c.outcome, page=True) for c in batch.calls)
    n = len(open_calls)
    body = (
        f"<h1>Review batch</h1><p>Answering as <b>{e(approver)}</b>. {n} open "
        f"call{'s' if n != 1 else ''} from <b>{e(batch.agent)}</b>. Nothing is decided "
        "until you press a button.</p>"
        f'{calls}<form method="post" action="{e(action)}">{_hidden(csrf)}'
        f"{_reason('Reason (optional; sent to the agent with a deny)')}"
        f'<div class="buttons">{buttons}</div></form>'
        f"{sign_in_form(sign_in, approver=approver, csrf=csrf)}"
    )
    return page("Review batch", body)


def sign_in_form(action: str | None, *, approver: str, csrf: str) -> str:
    """One button that signs this browser in to the web inbox as ``approver`` (a POST, once).

    Its own form (forms do not nest), after the answer's: pressing it
    decides nothing. Empty when ``action`` is ``None`` (the link signed in already).
    """
    if action is None:
        return ""
    return (
        f'<form method="post" action="{e(action)}" class="sign-in">{_hidden(csrf)}'
        f'<p><button type="submit">Open the web inbox as {e(approver)}</button><br>'
        "<small>Signs this browser in to tapgate's web inbox (once per link); "
        "decides nothing.</small></p></form>"
    )
