"""tapgate.core: the domain. Policy, gate, store, events, clock.

Imports no web framework, no chat SDK and no YAML (a test enforces it): the
same core serves the in-process library, the HTTP server and the CLI.
"""

from tapgate.core.clock import Clock, ManualClock, SystemClock
from tapgate.core.directory import Approver, Directory
from tapgate.core.events import EventBus
from tapgate.core.gate import Gate, new_id
from tapgate.core.models import (
    CONTACT_TOOL,
    RISKS,
    Action,
    AuditEntry,
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
from tapgate.core.policy import HAZARD_RULE, Policy, PolicyVerdict
from tapgate.core.rules import DEFAULT_RISK_ACTIONS, PolicySpec, Rule, ToolSpec
from tapgate.core.store import Store

__all__ = [
    "CONTACT_TOOL",
    "DEFAULT_RISK_ACTIONS",
    "HAZARD_RULE",
    "RISKS",
    "Action",
    "Approver",
    "AuditEntry",
    "Clock",
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
