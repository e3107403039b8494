"""tapgate.core: the domain. Policy, gate, store, events, clock.

Imports no web framework, no chat SDK and no YAML (a test enforces it): the
same core serves the in-process library, the HTTP server and the CLI.

Only the records (``models``) load with the package; the rest loads on first
use (PEP 562), so an agent-side client that needs ``ToolCall`` and
``Decision`` does not pay for SQLAlchemy and Alembic.
"""

from typing import TYPE_CHECKING

from tapgate._lazy import lazy_exports
from tapgate.core.models import (
    CONTACT_TOOL,
    RISKS,
    Action,
    AuditEntry,
    DecidedAtOnce,
    Decision,
    DecisionSource,
    DecisionStatus,
    Delivery,
    EventKind,
    GateEvent,
    Grant,
    GrantScope,
    Request,
    RequestStatus,
    Risk,
    Scope,
    Ticket,
    ToolCall,
    Verdict,
    args_digest,
    canonical_json,
)

if TYPE_CHECKING:
    from tapgate.core.clock import Clock, ManualClock, SystemClock
    from tapgate.core.directory import Approver, Directory
    from tapgate.core.events import EventBus
    from tapgate.core.gate import Gate
    from tapgate.core.policy import HAZARD_RULE, PATH_HAZARD_RULE, Policy, PolicyVerdict
    from tapgate.core.records import new_id
    from tapgate.core.rules import DEFAULT_RISK_ACTIONS, PolicySpec, Rule, ToolSpec
    from tapgate.core.store import Store

__all__ = [
    "CONTACT_TOOL",
    "DEFAULT_RISK_ACTIONS",
    "HAZARD_RULE",
    "PATH_HAZARD_RULE",
    "RISKS",
    "Action",
    "Approver",
    "AuditEntry",
    "Clock",
    "DecidedAtOnce",
    "Decision",
    "DecisionSource",
    "DecisionStatus",
    "Delivery",
    "Directory",
    "EventBus",
    "EventKind",
    "Gate",
    "GateEvent",
    "Grant",
    "GrantScope",
    "ManualClock",
    "Policy",
    "PolicySpec",
    "PolicyVerdict",
    "Request",
    "RequestStatus",
    "Risk",
    "Rule",
    "Scope",
    "Store",
    "SystemClock",
    "Ticket",
    "ToolCall",
    "ToolSpec",
    "Verdict",
    "args_digest",
    "canonical_json",
    "new_id",
]

_LAZY = {
    "Approver": "tapgate.core.directory",
    "Clock": "tapgate.core.clock",
    "DEFAULT_RISK_ACTIONS": "tapgate.core.rules",
    "Directory": "tapgate.core.directory",
    "EventBus": "tapgate.core.events",
    "Gate": "tapgate.core.gate",
    "HAZARD_RULE": "tapgate.core.policy",
    "ManualClock": "tapgate.core.clock",
    "PATH_HAZARD_RULE": "tapgate.core.policy",
    "Policy": "tapgate.core.policy",
    "PolicySpec": "tapgate.core.rules",
    "PolicyVerdict": "tapgate.core.policy",
    "Rule": "tapgate.core.rules",
    "Store": "tapgate.core.store",
    "SystemClock": "tapgate.core.clock",
    "ToolSpec": "tapgate.core.rules",
    "new_id": "tapgate.core.records",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
