"""Which of the agent's ACP options a tapgate decision selects, by the approval's scope.

The proxy's end-to-end tests (``test_acp_proxy``) run one agent with all
four option kinds; these check the choice itself against agents that offer
fewer, and against a server too old to send ``scope``.
"""

from __future__ import annotations

from typing import Any

import pytest
from acp.schema import PermissionOption

from tapgate.client._acp_decide import choose
from tapgate.client._wire import decision_from
from tapgate.gate.models import Decision

ALL = [
    PermissionOption(option_id="a1", name="Allow", kind="allow_once"),
    PermissionOption(option_id="aa", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="r1", name="Reject", kind="reject_once"),
    PermissionOption(option_id="ra", name="Always reject", kind="reject_always"),
]
NO_ALWAYS = [option for option in ALL if option.kind != "allow_always"]


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
    scope: Any, offered: list[PermissionOption], chosen: str
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
