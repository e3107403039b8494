"""One policy, one directory and a few helpers for the decision rules' unit tests.

The rule tests (``test_*_rules.py``, ``test_refusals.py``, ``test_typed_reasons.py``,
``test_self_approval.py``, ``test_remember.py``) call :mod:`tapgate.decisions`
directly against a real :class:`~tapgate.gate.gate.Gate` on a migrated SQLite
file, with a :class:`~tapgate.gate.clock.ManualClock`: no server, no platform
fake, no signatures. What a signed webhook adds on top is tested end to end
under tests/channels/ and in the other files of this folder.

Each rule below exists for one family of tests; the tool names say which.
"""

from __future__ import annotations

from typing import Any

from tapgate.decisions.buttons import BatchAction, TapAction
from tapgate.decisions.taps import BatchTap, Tap
from tapgate.gate import Approver, Directory, Gate, ToolCall
from tapgate.gate.models import AuditEntry, Request
from tapgate.policy import Policy, PolicySpec, Rule

__all__ = [
    "DAY",
    "DIRECTORY",
    "POLICY",
    "WINDOW",
    "ask",
    "audit",
    "batch_tap",
    "refusals",
    "rule",
    "tap",
]

DAY = 86400.0
WINDOW = 300.0
"""The typed-reason window the tests give :class:`~tapgate.decisions.typed_reasons.Reasons`."""

IDS = {"alice": "A", "bob": "B", "carol": "C", "dave": "D"}
"""Each approver's user id is ``U`` + this on Slack and ``L`` + this on LINE."""

DIRECTORY = Directory(
    [
        Approver(
            name=name,
            addresses=(("slack", f"U{short}"), ("line", f"L{short}")),
            groups=("oncall",) if name in ("alice", "bob", "carol") else (),
        )
        for name, short in IDS.items()
    ],
    channels=("slack", "line"),
)
"""alice, bob and carol are on call; dave is an approver of nothing these rules ask."""


def rule(n: int, tool: str, **terms: Any) -> Rule:
    """``policy.rules[n]``: an "ask" for ``tool`` unless ``action`` says otherwise."""
    return Rule(tool=tool, action=terms.pop("action", "ask"), source=f"policy.rules[{n}]", **terms)


POLICY = Policy(
    PolicySpec(
        rules=(
            # quorum: two of the on-call approvers
            rule(0, "deploy", approvers=("oncall",), quorum=2),
            # one approver suffices: refusals, batches, typed reasons
            rule(1, "restart", approvers=("alice", "bob")),
            # separation of duties: carol owns the agent "ci"
            rule(2, "billing", approvers=("alice", "carol"), self_approval=False),
            rule(3, "payroll", approvers=("oncall",), quorum=2, self_approval=False),
            # remembering: allowed by default, narrowed here
            rule(4, "rotate_keys", approvers=("alice",), remember=frozenset({"once", "session"})),
            rule(5, "purge", approvers=("alice",), remember=frozenset({"once"})),
            rule(6, "tag", approvers=("alice",), always_ttl=2 * DAY),
            # edits: the policy's second look at an edited "scale"
            rule(7, "scale", approvers=("alice",), args={"env": "staging"}),
            rule(8, "scale", approvers=("bob",), args={"env": "qa"}),
            rule(9, "scale", approvers=("alice", "bob"), args={"env": "eu"}, quorum=2),
            rule(10, "scale", action="deny", args={"env": "prod"}, reason="no prod scaling"),
            rule(11, "scale", action="allow", args={"env": "dev"}),
        ),
        owners={"ci": "carol"},
        default_timeout=600,
    )
)


async def ask(
    gate: Gate, tool: str, *, agent: str = "ci", session: str | None = None, **arguments: Any
) -> Request:
    """Submit ``tool`` with ``arguments`` (``{"n": 1}`` if none); the request a human decides."""
    call = ToolCall(tool=tool, arguments=arguments or {"n": 1}, agent=agent, session=session)
    ticket = await gate.submit(call)
    assert ticket.request is not None, ticket.decision
    return ticket.request


def tap(who: str, action: TapAction, request: Request | str, *, channel: str = "slack") -> Tap:
    """``who``'s tap (an approver's name, or ``X`` for a stranger) on ``request``."""
    return Tap(
        channel=channel,
        user_id=_user_id(who, channel),
        action=action,
        request_id=request if isinstance(request, str) else request.id,
    )


def batch_tap(who: str, action: BatchAction, batch_id: str) -> BatchTap:
    """``who``'s tap on a batch card's own button, on Slack."""
    return BatchTap(
        channel="slack", user_id=_user_id(who, "slack"), action=action, batch_id=batch_id
    )


def _user_id(who: str, channel: str) -> str:
    return ("U" if channel == "slack" else "L") + IDS.get(who, who)


async def audit(gate: Gate, request_id: str) -> list[tuple[str, str]]:
    """The request's audit lines as (event, actor), in order."""
    return [(e.event, e.actor) for e in await gate.audit_log(request_id=request_id)]


async def refusals(gate: Gate, request_id: str) -> list[AuditEntry]:
    """The request's ``refused`` audit lines, in order."""
    return [e for e in await gate.audit_log(request_id=request_id) if e.event == "refused"]
