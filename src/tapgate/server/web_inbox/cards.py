"""One pending request as an inline card in HTML, from the chat cards' presentation model.

What a card shows is :func:`tapgate.delivery.presentation.present` (masked,
invisible characters revealed, the same facts as Slack and LINE); this module
owns only the HTML: every value through :func:`~tapgate.server.web_inbox.layout.e`,
a shell command with its parts (as the policy judged them, hazards named), a
unified diff with colour and line numbers, JSON, a question's text. A web
page has room the chat has not, so nothing is cut: a long body shows its
first :data:`FOLD_LINES` lines and the rest behind "Show all".

Each card is a form that works without script (``POST /inbox/answer``);
``static/inbox.js`` adds the keys and answers in place.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from tapgate.delivery.presentation import ApprovalView, question_heading
from tapgate.policy.shell import parse
from tapgate.server.web_inbox.edits import edit_url
from tapgate.server.web_inbox.layout import e

__all__ = ["FOLD_LINES", "batch_html", "card_html"]

FOLD_LINES = 60
"""Lines of a body shown before "Show all": a screenful, the rest one click (or key) away."""

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def card_html(
    view: ApprovalView, *, csrf: str, note: str | None = None, editable: bool = False
) -> str:
    """The card of one pending request: facts, where it stands (``note``), arguments, the form.

    ``editable`` (:func:`tapgate.decisions.edits.not_editable` found nothing) adds
    "Edit", a link to the edit form (``bot/web/edits.py``), key ``e``.

    ``note`` is :func:`tapgate.delivery.standing.standing`: quorum progress
    ("Needs 2 approvals: 1 of 2: alice approved"), escalation, the owner.
    """
    rid = e(view.request_id)
    heading = question_heading(view) if view.is_question else f"{view.tool}"
    return (
        f'<article class="card risk-{e(view.risk)}" id="r-{rid}" data-id="{rid}" tabindex="-1" '
        f'aria-labelledby="t-{rid}">'
        f'<h3 id="t-{rid}"><span class="tool">{e(heading)}</span> '
        f'<span class="sid">{e(view.short_id)}</span></h3>'
        f"{_facts(view)}{_standing(note)}{_body(view)}{_form(view, csrf, editable)}"
        '<p class="outcome" role="status" aria-live="polite"></p></article>'
    )


def batch_html(
    views: Sequence[ApprovalView],
    batch_id: str,
    *,
    csrf: str,
    notes: Mapping[str, str | None] | None = None,
    editable: Collection[str] = (),
) -> str:
    """A batch's open calls under one header with "Allow all" / "Deny all" for the batch."""
    first = views[0]
    bid = e(batch_id)
    session = f" · session {e(first.session)}" if first.session else ""
    forms = "".join(
        f'<form method="post" action="/inbox/batch" class="inline batch-form">'
        f'<input type="hidden" name="csrf" value="{e(csrf)}">'
        f'<input type="hidden" name="batch_id" value="{bid}">'
        f'<button type="submit" name="action" value="{action}" class="{cls}">{label}</button>'
        "</form>"
        for action, cls, label in (
            ("approve_all", "allow", "Allow all (Alt+Return)"),
            ("deny_all", "deny", "Deny all (Alt+Esc)"),
        )
    )
    notes = notes or {}
    cards = "".join(
        card_html(v, csrf=csrf, note=notes.get(v.request_id), editable=v.request_id in editable)
        for v in views
    )
    label = f"Batch {batch_id[:8]} from {first.agent}"
    return (
        f'<section class="batch" data-batch="{bid}" aria-label="{e(label)}">'
        f'<header class="batch-head"><span>Batch <b>{e(batch_id[:8])}</b> · '
        f"{len(views)} open call{'s' if len(views) != 1 else ''} from <b>{e(first.agent)}</b>"
        f"{session}</span>{forms}</header>{cards}</section>"
    )


def _facts(view: ApprovalView) -> str:
    rows = [
        ("Agent", view.agent),
        ("Session", view.session or "none"),
        ("Rule", view.rule),
        ("Reason", view.reason),
        ("Risk", view.risk),
        ("Expires", f"{view.expires_text} ({view.time_left or 'soon'})"),
    ]
    cells = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in rows)
    return f'<dl class="facts">{cells}</dl>'


def _standing(note: str | None) -> str:
    return "" if note is None else f'<p class="standing">{e(note)}</p>'


def _body(view: ApprovalView) -> str:
    label = f"{view.label}: {view.path}" if view.path else view.label
    if (view.kind == "file_write" and view.label == "Edit") or view.body.startswith("--- "):
        shown = _diff(view.body)
    else:
        shown = _folded(view.body, f"body {view.kind}")
    parts = _parts(view.body) if view.kind == "shell" else ""
    extra = ""
    if view.extra:
        extra = f'<p class="label">Other arguments</p>{_folded(view.extra, "body json")}'
    return f'<div class="args"><p class="label">{e(label)}</p>{shown}{parts}{extra}</div>'


def _folded(text: str, cls: str) -> str:
    """``<pre>`` of ``text``, the lines past :data:`FOLD_LINES` behind "Show all"."""
    lines = text.split("\n")
    if len(lines) <= FOLD_LINES:
        return f'<pre class="{cls}">{e(text)}</pre>'
    head = "\n".join(lines[:FOLD_LINES])
    return (
        f'<pre class="{cls}">{e(head)}</pre><details class="more">'
        f"<summary>Show all {len(lines)} lines</summary>"
        f'<pre class="{cls}">{e(text)}</pre></details>'
    )


def _parts(command: str) -> str:
    """The simple commands the line would run, and its hazards, as the policy sees them."""
    parsed = parse(command)
    if len(parsed.commands) <= 1 and parsed.safe:
        return ""
    items = "".join(f"<li><code>{e(c.text)}</code></li>" for c in parsed.commands)
    hazards = "".join(f"<li>{e(h)}</li>" for h in parsed.hazards)
    out = f'<p class="label">Runs {len(parsed.commands)} commands</p><ol class="parts">{items}</ol>'
    if hazards:
        out += f'<p class="label">Never auto-allowed because</p><ul class="hazards">{hazards}</ul>'
    return out


def _diff(text: str) -> str:
    """A unified diff as a table: old and new line numbers, each line coloured by its kind."""
    rows: list[str] = []
    old = new = 0
    lines = text.split("\n")
    for line in lines:
        hunk = _HUNK.match(line)
        if hunk:
            old, new = int(hunk.group(1)), int(hunk.group(2))
            rows.append(f'<tr class="hunk"><td></td><td></td><td>{e(line)}</td></tr>')
            continue
        if line.startswith(("---", "+++")) and not rows:
            rows.append(f'<tr class="file"><td></td><td></td><td>{e(line)}</td></tr>')
            continue
        kind, a, b = "ctx", str(old), str(new)
        if line.startswith("+"):
            kind, a, b = "add", "", str(new)
            new += 1
        elif line.startswith("-"):
            kind, a, b = "del", str(old), ""
            old += 1
        else:
            old, new = old + 1, new + 1
        rows.append(f'<tr class="{kind}"><td>{a}</td><td>{b}</td><td>{e(line)}</td></tr>')
    table = f'<table class="diff"><tbody>{"".join(rows[:FOLD_LINES])}</tbody></table>'
    if len(rows) > FOLD_LINES:
        table += (
            f'<details class="more"><summary>Show all {len(lines)} lines</summary>'
            f'<table class="diff"><tbody>{"".join(rows)}</tbody></table></details>'
        )
    return table


def _form(view: ApprovalView, csrf: str, editable: bool) -> str:
    rid = e(view.request_id)
    hidden = (
        f'<input type="hidden" name="csrf" value="{e(csrf)}">'
        f'<input type="hidden" name="request_id" value="{rid}">'
    )
    if view.is_question:
        return (
            f'<form method="post" action="/inbox/answer" class="answer">{hidden}'
            '<label>Answer <textarea name="reason" class="reason" maxlength="2000">'
            "</textarea></label>"
            '<button type="submit" name="action" value="reply" class="allow">Reply</button>'
            '<button type="submit" name="action" value="dismiss" class="deny">Dismiss</button>'
            "</form>"
        )
    session = ""
    if view.can_allow_session:
        covers = f" ({e(view.session_covers)})" if view.session_covers else ""
        session = (
            f'<label class="check"><input type="checkbox" name="session" value="1">'
            f" Allow for this session{covers}</label>"
        )
    always = ""
    if view.can_allow_always:
        always = (
            '<button type="submit" name="action" value="approve_always" class="always">'
            f'Always allow</button><small class="covers">{e(view.always_covers or "")}</small>'
        )
    edit = ""
    if editable:
        edit = f'<a class="edit" href="{e(edit_url(view.request_id))}">Edit <kbd>e</kbd></a>'
    return (
        f'<form method="post" action="/inbox/answer" class="answer">{hidden}{session}'
        f'<label class="reason-label">Reason (optional) <input name="reason" class="reason" '
        f'maxlength="2000" autocomplete="off"></label>'
        '<button type="submit" name="action" value="approve" class="allow">'
        "Allow <kbd>⏎</kbd></button>"
        '<button type="submit" name="action" value="deny" class="deny">Deny <kbd>Esc</kbd></button>'
        f"{always}{edit}</form>"
    )
