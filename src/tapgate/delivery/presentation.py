"""The one presentation model both chat renderers draw from.

Owns what an approver is shown about a request, independent of the platform:
which facts, how the tool arguments are displayed (a shell command, a file
edit as a diff, or JSON), and that every piece of agent-provided text has been
through :func:`~tapgate.policy.masking.clean` before any renderer sees it.
Renderers own only escaping and platform limits, using :func:`fit_text` /
:func:`truncate_lines` so that a cut is always visible.

A question to a human (``CONTACT_TOOL``) is a view of kind ``question``: its
``message`` is the body, its ``subject`` the heading, and the renderers show
Reply / Dismiss instead of Approve / Deny; once answered, the outcome reads
"Answered by alice" and the answer is shown (masked and cut like agent text).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from tapgate.decisions.buttons import SHORT_ID_LENGTH
from tapgate.decisions.edits import not_editable
from tapgate.decisions.remember import Offer
from tapgate.decisions.texts import always_label, session_label
from tapgate.delivery.file_diff import unified_diff as _diff
from tapgate.delivery.standing import standing
from tapgate.gate.models import CONTACT_TOOL, Request, RequestStatus, Risk, Scope
from tapgate.policy.masking import clean, clean_name, mask_arguments, mask_text, reveal_invisible

__all__ = [
    "ApprovalView",
    "ArgumentKind",
    "ResolvedStatus",
    "clip",
    "fit_text",
    "format_utc",
    "outcome_text",
    "present",
    "question_heading",
    "resolved_title",
    "truncate_lines",
]

ArgumentKind = Literal["shell", "file_write", "json", "question"]
"""How the arguments are shown: a command, a file change, pretty JSON, or a question's text."""

ResolvedStatus = Literal["approved", "denied", "expired", "cancelled"]
"""The terminal statuses a message can be updated to."""

_MIN_PARTIAL = 40  # below this, a cut line says less than the marker that replaces it
_SHELL_TOOL = re.compile(r"bash|shell|zsh|run_?command|exec|terminal|(?<![a-z])(?:sh|cmd)(?![a-z])")
_SHELL_ARGS = ("command", "cmd")
_PATH_ARGS = ("file_path", "path", "filepath", "filename")


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalView:
    """Everything an approval message shows, already masked and made visible.

    A platform-neutral record so that Slack and LINE show the same facts and
    cannot drift apart; ``body`` is complete (not truncated) because each
    platform has its own limits.
    """

    request_id: str
    short_id: str
    agent: str
    session: str | None
    tool: str
    risk: Risk
    rule: str
    reason: str
    approvers: tuple[str, ...]
    status: RequestStatus
    expires_at: datetime
    expires_text: str
    time_left: str | None
    kind: ArgumentKind
    label: str
    path: str | None
    body: str
    extra: str | None
    can_allow_session: bool
    subject: str | None = None
    note: str | None = None
    """Quorum progress, escalation, the owner (:func:`~tapgate.delivery.standing.standing`)."""
    can_allow_always: bool = False
    session_covers: str | None = None
    """"Session: deploy_web with env=staging in s-42" when the session button shows."""
    always_covers: str | None = None
    """"Always: deploy_web with env=staging, 30 days" when "Always allow" shows."""
    can_edit: bool = False
    """A single call whose arguments an approver may edit (``core.edits``): Slack shows
    "Edit…", LINE a line pointing to the web inbox. Never for a batch's calls."""

    @property
    def is_question(self) -> bool:
        """A question to answer (Reply / Dismiss), not a call to approve."""
        return self.kind == "question"


def present(
    request: Request,
    *,
    tool_shell_arg: str | None = None,
    now: datetime | None = None,
    offer: Offer | None = None,
) -> ApprovalView:
    """Build the :class:`ApprovalView` of ``request``.

    ``tool_shell_arg`` names the argument holding a shell command for tools
    configured as shell tools; ``now`` fills ``time_left`` (and dates an expiry
    that is not today), so a message says "in 5 min" without reading a clock.
    ``offer`` (:func:`tapgate.decisions.remember.offer_for`) decides the remember
    buttons and what each covers; without one a card offers the session
    button for a grantable call with a session, and never "Always".
    """
    session_ok = request.tool != CONTACT_TOOL and request.grantable and bool(request.session)
    if offer is not None:
        session_ok = session_ok and offer.session
    always_ok = offer is not None and offer.always and request.tool != CONTACT_TOOL
    if request.tool == CONTACT_TOOL:
        shown, subject = _question(request.arguments)
    else:
        shown, subject = _classify(request.tool, request.arguments, tool_shell_arg), None
    kind, label, path, body, rest = shown
    return ApprovalView(
        request_id=request.id,
        short_id=request.id[:SHORT_ID_LENGTH],
        agent=clean_name(request.agent),
        session=None if request.session is None else clean_name(request.session),
        tool=clean_name(request.tool),
        risk=request.risk,
        rule=clean_name(request.rule),
        reason=clean_name(request.reason),
        approvers=request.approvers,
        status=request.status,
        expires_at=request.expires_at,
        expires_text=_expires_text(request.expires_at, now),
        time_left=None if now is None else _time_left(request.expires_at, now),
        kind=kind,
        label=label,
        path=None if path is None else clean(path),
        body=reveal_invisible(body),
        extra=reveal_invisible(_pretty_json(rest)) if rest else None,
        can_allow_session=session_ok,
        subject=None if subject is None else clean(subject),
        note=standing(request),
        can_allow_always=always_ok,
        can_edit=request.batch_id is None and not_editable(request) is None,
        session_covers=(
            clean(session_label(offer.covers, request.session or ""))
            if offer is not None and session_ok
            else None
        ),
        always_covers=(
            clean(always_label(offer.covers, offer.always_ttl, offer.always_uses))
            if offer is not None and always_ok
            else None
        ),
    )


_Shown = tuple[ArgumentKind, str, str | None, str, dict[str, Any]]
"""(kind, label, path, masked body, the arguments the body does not show)."""


def _classify(tool: str, arguments: Mapping[str, Any], tool_shell_arg: str | None) -> _Shown:
    shell_arg = _shell_arg(tool, arguments, tool_shell_arg)
    if shell_arg is not None:
        command = _command_text(arguments[shell_arg]) or ""
        return "shell", "Command", None, mask_text(command), _rest(arguments, shell_arg)
    path_arg = next((k for k in _PATH_ARGS if isinstance(arguments.get(k), str)), None)
    if path_arg is not None:
        shown = _file_write(arguments, path_arg)
        if shown is not None:
            return shown
    return "json", "Arguments", None, _pretty_json(arguments), {}


def _question(arguments: Mapping[str, Any]) -> tuple[_Shown, str | None]:
    """A question's ``message`` as the body and its ``subject``; anything else stays visible.

    A question whose ``message`` is not text is still a question (it gets a
    Reply button), shown as JSON so the approver sees what the agent sent.
    """
    subject = arguments.get("subject")
    subject = subject if isinstance(subject, str) and subject.strip() else None
    shown_keys = ("subject",) if subject is not None else ()
    message = arguments.get("message")
    if not isinstance(message, str):
        return ("question", "Question", None, _pretty_json(arguments), {}), subject
    rest = _rest(arguments, "message", *shown_keys)
    return ("question", "Question", None, mask_text(message), rest), subject


def _file_write(arguments: Mapping[str, Any], path_arg: str) -> _Shown | None:
    """An edit as a unified diff, a patch as given, new content as an excerpt."""
    path = mask_text(arguments[path_arg])
    old, new = arguments.get("old_string"), arguments.get("new_string")
    if isinstance(old, str) and isinstance(new, str):
        body = _diff(mask_text(old), mask_text(new), path)
        rest = _rest(arguments, path_arg, "old_string", "new_string")
        return "file_write", "Edit", path, body, rest
    for key in ("diff", "patch"):
        if isinstance(arguments.get(key), str):
            body = mask_text(arguments[key])
            return "file_write", "Patch", path, body, _rest(arguments, path_arg, key)
    content = arguments.get("content")
    if isinstance(content, str):
        body = mask_text(content)
        line_count = len(body.splitlines())
        size = f"{_count(line_count, 'line')}, {_count(len(body), 'character')}"
        return "file_write", f"Write ({size})", path, body, _rest(arguments, path_arg, "content")
    return None


def _shell_arg(tool: str, arguments: Mapping[str, Any], tool_shell_arg: str | None) -> str | None:
    if tool_shell_arg is not None and _command_text(arguments.get(tool_shell_arg)) is not None:
        return tool_shell_arg
    if _SHELL_TOOL.search(tool.lower()):
        return next((k for k in _SHELL_ARGS if _command_text(arguments.get(k)) is not None), None)
    return None


def _command_text(value: object) -> str | None:
    """A command as one string; an argv list is quoted the way a shell would read it."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        return shlex.join(value)
    return None


def _rest(arguments: Mapping[str, Any], *shown: str) -> dict[str, Any]:
    return {key: value for key, value in arguments.items() if key not in shown}


def _pretty_json(arguments: Mapping[str, Any]) -> str:
    # Masked as data (secret-named keys) and again as text (patterns inside values).
    text = json.dumps(
        mask_arguments(arguments), sort_keys=True, indent=2, ensure_ascii=False, default=str
    )
    return mask_text(text)


def format_utc(at: datetime) -> str:
    """``12:03 UTC``: approvers sit in many time zones, so say which one."""
    return _as_utc(at).strftime("%H:%M UTC")


def _as_utc(at: datetime) -> datetime:
    # tapgate's clock is UTC; a naive datetime can only have come from it.
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _expires_text(expires_at: datetime, now: datetime | None) -> str:
    at = _as_utc(expires_at)
    if now is not None and at.date() != _as_utc(now).date():
        return at.strftime("%Y-%m-%d %H:%M UTC")
    return format_utc(at)


def _time_left(expires_at: datetime, now: datetime) -> str:
    seconds = (_as_utc(expires_at) - _as_utc(now)).total_seconds()
    if seconds <= 0:
        return "expired"
    minutes = math.ceil(seconds / 60)
    return f"in {minutes} min" if minutes < 120 else f"in {minutes // 60} h {minutes % 60} min"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _marker(cut_chars: int, more_lines: int) -> str:
    parts = [_count(cut_chars, "more character")] if cut_chars else []
    if more_lines:
        parts.append(_count(more_lines, "more line"))
    return "\n… " + " and ".join(parts)


def truncate_lines(text: str, max_chars: int, max_lines: int) -> str:
    """Shorten ``text`` to ``max_chars`` and ``max_lines``, saying what was cut.

    Cuts on line boundaries and appends ``… N more lines``; a line too long to
    ever fit is cut inside and reported as ``… N more characters``. The marker
    sits on its own line, so the result has at most ``max_lines + 1`` lines.
    Raises ``ValueError`` when ``max_chars`` leaves no room for the marker.
    """
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    if len(text) <= max_chars and len(lines) <= max_lines:
        return text
    budget = max_chars - len(_marker(len(text), len(lines)))
    if budget < _MIN_PARTIAL or max_lines < 1:
        raise ValueError(f"max_chars={max_chars}, max_lines={max_lines} leave no room for text")
    kept: list[str] = []
    used = cut_chars = 0
    for line in lines[:max_lines]:
        cost = len(line) + (1 if kept else 0)
        if used + cost <= budget:
            kept.append(line)
            used += cost
            continue
        room = budget - used - (1 if kept else 0)
        if len(line) > budget and room >= _MIN_PARTIAL:
            kept.append(line[:room])
            cut_chars = len(line) - room
        break
    return "\n".join(kept) + _marker(cut_chars, len(lines) - len(kept))


def fit_text(
    text: str,
    *,
    max_len: int,
    max_lines: int,
    encode: Callable[[str], str] = str,
    measure: Callable[[str], int] = len,
) -> str:
    """``encode(truncate_lines(text, …))`` whose ``measure`` is at most ``max_len``.

    Platforms count limits on the *encoded* text (Slack after ``&lt;``
    escaping, LINE in UTF-16 units) while a cut must fall on the raw text, or
    it could split an escape sequence. The budget shrinks until it fits.
    """
    budget = max_len
    while True:
        out = encode(truncate_lines(text, budget, max_lines))
        size = measure(out)
        if size <= max_len:
            return out
        budget = min(budget - 1, budget * max_len // size)


def clip(text: str, max_len: int, *, measure: Callable[[str], int] = len) -> str:
    """``text`` on one line, cut with ``…`` so that ``measure`` is at most ``max_len``.

    For short facts (agent, tool, rule) where a line-count marker would be noise.
    """
    text = " ".join(text.split("\n"))
    if measure(text) <= max_len:
        return text
    cut = text[: max(max_len - 1, 0)]
    while cut and measure(cut + "…") > max_len:
        cut = cut[: -max(1, (measure(cut + "…") - max_len) // 2)]
    return cut + "…"


_OUTCOMES: dict[ResolvedStatus, tuple[str, str]] = {
    "approved": ("✅", "Approved"),
    "denied": ("❌", "Denied"),
    "expired": ("⌛", "Expired"),
    "cancelled": ("🚫", "Cancelled"),
}
_QUESTION_OUTCOMES: dict[ResolvedStatus, tuple[str, str]] = {
    **_OUTCOMES,
    "approved": ("💬", "Answered"),
    "denied": ("🔕", "Dismissed"),
}


def outcome_text(
    status: ResolvedStatus,
    *,
    by: str | None,
    at: datetime,
    scope: Scope | None = None,
    question: bool = False,
) -> str:
    """``✅ Approved by alice at 12:03 UTC``: one line both platforms can reuse.

    With ``question``, ``💬 Answered by alice at 12:03 UTC``. Unescaped plain
    text; ``by`` is shown as given, so renderers escape it.
    """
    icon, verb = (_QUESTION_OUTCOMES if question else _OUTCOMES)[status]
    who = f" by {by}" if by and status != "expired" else ""
    reach = {"session": " for this session", "always": " permanently"}.get(scope or "", "")
    if status != "approved" or question:
        reach = ""
    return f"{icon} {verb}{reach}{who} at {format_utc(at)}"


def resolved_title(status: ResolvedStatus, *, question: bool = False) -> str:
    """``Approved`` / ``Denied`` / ``Expired`` / ``Cancelled`` (``Answered`` / ``Dismissed``)."""
    return (_QUESTION_OUTCOMES if question else _OUTCOMES)[status][1]


def question_heading(view: ApprovalView) -> str:
    """``Deploy window`` (the subject), else ``Question from ci``: unescaped, already masked."""
    return view.subject or f"Question from {view.agent}"
