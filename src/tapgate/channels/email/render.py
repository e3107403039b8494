"""A request (or a batch) as mail text and HTML, from the chat cards' presentation model.

What a message shows is :func:`tapgate.delivery.presentation.present` (and
:func:`~tapgate.delivery.batch_view.present_batch`): arguments masked,
invisible and control characters made visible, the same facts as the Slack
and LINE cards. This module owns only the layout. Every value that reaches
HTML goes through :func:`e` (``html.escape`` with quotes): tool arguments are
the model's text, and so are the agent's and session's names. Bodies are cut
to :data:`BODY_MAX_CHARS` / :data:`BODY_MAX_LINES` in a mail (the page shows
more); a header value is one line, cut to :data:`SUBJECT_MAX`.
"""

from __future__ import annotations

import html

from tapgate.delivery.batch_view import BatchCall, BatchView
from tapgate.delivery.presentation import ApprovalView, clip, question_heading, truncate_lines

__all__ = [
    "BODY_MAX_CHARS",
    "BODY_MAX_LINES",
    "SUBJECT_MAX",
    "batch_subject",
    "call_html",
    "call_text",
    "e",
    "facts",
    "request_subject",
]

BODY_MAX_CHARS = 6000
"""A mail's body per call: enough to judge most calls; the page has the rest."""
BODY_MAX_LINES = 80
SUBJECT_MAX = 150
"""Header values stay one short line (mail clients show about 80 characters anyway)."""
PAGE_MAX_CHARS = 200_000
"""The review page's body per call: a web page has room the mail has not."""
PAGE_MAX_LINES = 4000


def e(text: object) -> str:
    """``text`` safe inside HTML content and quoted attributes."""
    return html.escape(str(text), quote=True)


def _header(text: str) -> str:
    """One header line: no line break survives (``clip`` joins lines; CR and tabs go too)."""
    return clip(" ".join(text.replace("\r", " ").replace("\t", " ").split()), SUBJECT_MAX)


def request_subject(view: ApprovalView, *, reminder: bool = False) -> str:
    """``Approve deploy for ci? [ab12cd34]``: the agent and the tool, then the short id."""
    if view.is_question:
        what = f"Question from {view.agent}: {question_heading(view)}"
    else:
        what = f"Approve {view.tool} for {view.agent}?"
    prefix = "Reminder: " if reminder else ""
    return _header(f"{prefix}{what} [{view.short_id}]")


def batch_subject(batch: BatchView, *, reminder: bool = False) -> str:
    """``Approve 3 calls (deploy, migrate) for ci? [ab12cd34]``."""
    tools = ", ".join(dict.fromkeys(c.view.tool for c in batch.calls))
    n = len(batch.calls)
    prefix = "Reminder: " if reminder else ""
    return _header(
        f"{prefix}Approve {n} call{'s' if n != 1 else ''} ({tools}) for {batch.agent}? "
        f"[{batch.short_id}]"
    )


def facts(view: ApprovalView) -> list[tuple[str, str]]:
    """The facts every card shows, in the chat cards' order (unescaped)."""
    rows = [
        ("Agent", view.agent),
        ("Session", view.session or "none"),
        ("Rule", view.rule),
        ("Reason", view.reason),
        ("Risk", view.risk),
        ("Expires", f"{view.expires_text} ({view.time_left or 'soon'})"),
    ]
    if view.note:
        rows.append(("Standing", view.note))
    return rows


def _cut(text: str, *, page: bool) -> str:
    if page:
        return truncate_lines(text, PAGE_MAX_CHARS, PAGE_MAX_LINES)
    return truncate_lines(text, BODY_MAX_CHARS, BODY_MAX_LINES)


def _label(view: ApprovalView) -> str:
    return f"{view.label}: {view.path}" if view.path else view.label


def call_text(view: ApprovalView, *, outcome: str | None = None) -> str:
    """One call as plain text: heading, facts, its arguments (cut), its outcome if decided."""
    heading = question_heading(view) if view.is_question else view.tool
    lines = [f"{heading} [{view.short_id}]"]
    lines += [f"  {k}: {clip(v, 300)}" for k, v in facts(view)]
    lines += ["", f"{_label(view)}:", _cut(view.body, page=False)]
    if view.extra:
        lines += ["", "Other arguments:", _cut(view.extra, page=False)]
    if outcome:
        lines += ["", outcome]
    return "\n".join(lines)


def call_html(view: ApprovalView, *, outcome: str | None = None, page: bool = False) -> str:
    """One call as HTML (every value escaped), for the mail (cut) or the page (``page``)."""
    heading = question_heading(view) if view.is_question else view.tool
    cells = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts(view))
    body = (
        f'<p class="label"><b>{e(_label(view))}</b></p><pre>{e(_cut(view.body, page=page))}</pre>'
    )
    if view.extra:
        extra = e(_cut(view.extra, page=page))
        body += f'<p class="label"><b>Other arguments</b></p><pre>{extra}</pre>'
    done = f'<p class="outcome"><b>{e(outcome)}</b></p>' if outcome else ""
    return (
        f'<section class="card risk-{e(view.risk)}"><h2>{e(heading)} '
        f'<small>[{e(view.short_id)}]</small></h2><dl class="facts">{cells}</dl>{body}{done}'
        "</section>"
    )


def batch_calls_text(batch: BatchView) -> str:
    """Every call of a batch as text, each with its outcome once decided."""
    return "\n\n".join(call_text(c.view, outcome=c.outcome) for c in batch.calls)


def batch_calls_html(batch: BatchView, *, page: bool = False) -> str:
    """Every call of a batch as HTML."""
    return "".join(_batch_call_html(c, page) for c in batch.calls)


def _batch_call_html(call: BatchCall, page: bool) -> str:
    return call_html(call.view, outcome=call.outcome, page=page)
