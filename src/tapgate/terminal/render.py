"""A request drawn for an interactive terminal: the rich presentation, in ANSI colour.

The terminal prompt handler and ``tapgate inbox`` both show a request the
way the chat cards do (the facts, then the command, the edit as a diff or
the arguments as JSON), from the same masked
:class:`~tapgate.delivery.presentation.ApprovalView`. Every piece of agent
text has been through the presentation model, which turns control
characters (escape sequences included) into visible marks, so the only
escape sequences on screen are the colours added here.
"""

from __future__ import annotations

from tapgate.delivery.presentation import ApprovalView, question_heading, truncate_lines

__all__ = ["BOLD", "DIM", "RESET", "REVERSE", "paint", "render_terminal"]

RESET = "\x1b[0m"
BOLD = "\x1b[1m"
DIM = "\x1b[2m"
REVERSE = "\x1b[7m"
_RED, _GREEN, _YELLOW, _CYAN = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[36m"
_RISK_COLOUR = {"read_only": _GREEN, "write": _YELLOW, "destructive": _RED + BOLD}
_BODY_MAX_CHARS = 8000
_INDENT = "    "


def paint(text: str, style: str, *, colour: bool = True) -> str:
    """``text`` in ``style`` (one of the constants here), or as is without colour."""
    return f"{style}{text}{RESET}" if colour and style else text


def render_terminal(view: ApprovalView, *, max_lines: int = 60, colour: bool = True) -> str:
    """The request as lines for a terminal: facts, then the arguments, at most ``max_lines``.

    A diff's added lines are green and removed ones red, a command is bold:
    what an approver at a desk reads first. Ends with a newline.
    """
    heading = (
        f"Question: {question_heading(view)}"
        if view.is_question
        else f"Approval needed: {view.tool}"
    )
    risk = paint(view.risk, _RISK_COLOUR[view.risk], colour=colour)
    lines = [
        paint(heading, BOLD, colour=colour)
        + paint(f"  (request {view.request_id})", DIM, colour=colour),
        f"  agent:   {view.agent}" + (f"   session: {view.session}" if view.session else ""),
    ]
    if not view.is_question:
        lines.append(
            f"  risk:    {risk}   rule: {view.rule}" + (f" ({view.reason})" if view.reason else "")
        )
    left = f" ({view.time_left})" if view.time_left else ""
    lines.append(
        f"  expires: {view.expires_text}{left}   approvers: {', '.join(view.approvers) or '-'}"
    )
    lines.append(f"  {view.label}" + (f": {view.path}" if view.path else "") + ":")
    room = max(max_lines - len(lines) - 2, 3)
    body = truncate_lines(view.body, _BODY_MAX_CHARS, room)
    lines += [_INDENT + _colour_line(line, view, colour) for line in body.split("\n")]
    if view.extra is not None and len(lines) < max_lines - 2:
        extra = truncate_lines(view.extra, _BODY_MAX_CHARS, max(max_lines - len(lines) - 1, 1))
        lines.append("  Other arguments:")
        lines += [_INDENT + line for line in extra.split("\n")]
    return "\n".join(lines[:max_lines]) + "\n"


_DIFF_STYLES = (("+++", BOLD), ("---", BOLD), ("@@", _CYAN), ("+", _GREEN), ("-", _RED))


def _colour_line(line: str, view: ApprovalView, colour: bool) -> str:
    if not colour or line.startswith("…"):  # a cut marker is tapgate's, not the agent's
        return line
    if view.kind == "shell":
        return paint(line, BOLD)
    if view.kind == "file_write":
        style = next((s for prefix, s in _DIFF_STYLES if line.startswith(prefix)), "")
        return paint(line, style)
    return line
