"""What the Claude Code hook answers and the flags it takes: one definition for both paths.

The hook runs two ways (``tapgate.client._fast_hook`` as ``python -I -S``,
and the full hook in ``tapgate.client._hook``); both build their answers,
reasons and flag values here, and hand a submit's answer from the first to
the second in the format here, so the two cannot drift. Like the fast path,
this module imports only built-in modules, and those only where used.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

HOOK_EVENTS = ("PreToolUse", "PermissionRequest")
VERDICTS = ("allow", "deny")
DECISION_STATUSES = ("allowed", "denied", "approved", "expired", "cancelled")
DECISION_SOURCES = ("policy", "grant", "approver", "timeout", "cancel")
"""The wire's values, as ``core.models`` declares them (a test holds them equal)."""

DEFAULT_URL = "http://127.0.0.1:8080"
TOKEN_ENV = "TAPGATE_AGENT_TOKEN"  # noqa: S105 - the variable's name, not a token
CHOICES = {"--on-error": ("deny", "ask", "allow"), "--on-expired": ("deny", "ask")}
_MAX_REPLAY = 64 << 10
"""The most a hand-over carries (a command line holds 128 KiB); tapgate's answers are ~1 KiB."""


def hook_output(
    event: str, verdict: str, reason: str, updated_input: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Claude Code's answer for ``verdict``; ``updated_input``: an approver's edit (allow only)."""
    if event == "PreToolUse":
        output: dict[str, Any] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": verdict,
            "permissionDecisionReason": reason,
        }
        if updated_input is not None and verdict == "allow":
            output["updatedInput"] = dict(updated_input)
        return {"hookSpecificOutput": output}
    if verdict == "ask":
        # No decision: Claude Code shows its own permission dialog; tell the user why.
        return {"systemMessage": reason}
    decision: dict[str, Any] = {"behavior": verdict}
    if verdict == "deny":
        decision["message"] = reason
    elif updated_input is not None:
        decision["updatedInput"] = dict(updated_input)
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def fallback(event: str, verdict: str, problem: str, flag: str) -> dict[str, Any]:
    """The answer a flag chose (``--on-error deny``...) for ``problem``, which the reason names."""
    done = {
        "deny": "denied",
        "allow": "allowed",
        "ask": "asking in the agent's own prompt instead",
    }[verdict]
    return hook_output(event, verdict, f"tapgate: {problem}; {done} ({flag} {verdict})")


def reason_line(source: str, decided_by: str, reason: str, rule: str | None, allowed: bool) -> str:
    """One line on who or what decided: approvers' reasons name nobody, policy reasons no rule."""
    if source == "approver" and decided_by not in reason:
        verb = "approved" if allowed else "denied"
        return f"{verb} by {decided_by}: {reason}"
    if source == "policy" and rule and rule not in reason:
        return f"{reason} ({rule})"
    return reason


def seconds(text: str) -> float:
    """``--timeout``: a positive, finite number of seconds; ``ValueError`` says what is wrong."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be a positive number of seconds: {text!r}")
    return value


def duration(text: str) -> float:
    """``--retry-for``: seconds in ``90``, ``90s``, ``2m`` or ``1h``; 0 is allowed."""
    import math

    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    number, unit = (text[:-1], units[text[-1]]) if text[-1:] in units else (text, 1.0)
    try:
        value = float(number) * unit
    except ValueError:
        raise ValueError(f"not a duration (90, 90s, 2m, 1h): {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"must be a duration of 0 or more: {text!r}")
    return value


def encode_submitted(received: bytes, failure: tuple[str, str] | None) -> str:
    """``--submitted``: what the fast path's submit got back (its bytes, or how reading failed)."""
    import binascii

    if len(received) > _MAX_REPLAY:  # too large to hand over: a bad answer
        received, failure = b"", ("RemoteProtocolError", "an answer too large to hand over")
    head = "" if failure is None else f"{failure[0]}: {failure[1]}"
    return binascii.b2a_base64(head.encode() + b"\n" + received, newline=False).decode()


def decode_submitted(value: str) -> tuple[bytes, tuple[str, str] | None]:
    """``encode_submitted``'s bytes and failure; ``ValueError`` for anything else."""
    import binascii

    head, newline, received = binascii.a2b_base64(value.encode()).partition(b"\n")
    kind, colon, message = head.decode().partition(": ")
    if not newline or (head and not (colon and kind.isalpha())):
        raise ValueError("not an answer handed over by the hook's fast path")
    return received, (kind, message) if head else None
