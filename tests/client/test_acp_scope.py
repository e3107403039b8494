"""Which of the agent's ACP options a tapgate decision selects, by the approval's scope.

The proxy's end-to-end tests (``test_acp_proxy``) run one agent with all
four option kinds; these check the choice itself against agents that offer
fewer, and against a server too old to send ``scope``.

The ACP SDK is imported by the tests that use it, not at collection: its
schema module takes ~0.4 s to import, which every test process collecting
this file paid, though one runs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import pytest

from tapgate.client._wire import decision_from
from tapgate.gate.models import Decision

if TYPE_CHECKING:
    from acp.schema import PermissionOption

Kind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
KINDS: dict[str, tuple[str, Kind]] = {
    "a1": ("Allow", "allow_once"),
    "aa": ("Always allow", "allow_always"),
    "r1": ("Reject", "reject_once"),
    "ra": ("Always reject", "reject_always"),
}
"""The agent's options by id: its name and ACP kind."""

ALL = ("a1", "aa", "r1", "ra")
NO_ALWAYS = ("a1", "r1", "ra")


def choose(decision: Decision, offered: tuple[str, ...]) -> str | None:
    """The id tapgate selects among the ``offered`` options."""
    from acp.schema import PermissionOption

    from tapgate.client._acp_decide import choose

    options: list[PermissionOption] = [
        PermissionOption(option_id=i, name=KINDS[i][0], kind=KINDS[i][1]) for i in offered
    ]
    return choose(decision, options)


def approval(**fields: Any) -> Decision:
    base: dict[str, Any] = {
        "verdict": "allow",
        "status": "approved",
        "source": "approver",
        "decided_by": "alice",
        "reason": "approved by alice",
    }
    return Decision(**(base | fields))


@pytest.mark.parametrize(
    ("scope", "offered", "chosen"),
    [
        ("session", ALL, "aa"),
        ("always", ALL, "aa"),
        ("once", ALL, "a1"),
        (None, ALL, "a1"),
        ("session", NO_ALWAYS, "a1"),  # never an option the agent did not offer
    ],
)
def test_an_approval_selects_by_its_scope(
    scope: Any, offered: tuple[str, ...], chosen: str
) -> None:
    assert choose(approval(scope=scope), offered) == chosen


def test_an_edited_approval_for_the_session_is_still_rejected() -> None:
    edited = approval(scope="session", edited=True, arguments={"command": "ls"})
    assert choose(edited, ALL) == "r1"


def test_a_grants_allow_from_a_server_that_sends_no_scope_still_selects_allow_always() -> None:
    old = decision_from(
        {
            "decision": "allow",
            "status": "allowed",
            "source": "grant",
            "decided_by": "grant:g1",
            "reason": "allowed by a session grant from alice",
        }
    )
    assert old is not None and old.scope is None
    assert choose(old, ALL) == "aa"
