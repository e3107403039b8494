"""tapgate.gate: the gate. Tool calls in, decisions out, waiting for a human when policy asks.

The records every layer shares (``models``), the :class:`Gate`, its waiters,
event bus, clock and directory of approvers. Imports no web framework, no chat
SDK, no YAML and no channel (a test enforces it).

Only the records (``models``) load with the package; the rest loads on first
use (PEP 562), so an agent-side client that needs ``ToolCall`` and
``Decision`` does not pay for SQLAlchemy and Alembic.
"""

from typing import TYPE_CHECKING

from tapgate._lazy import lazy_exports
from tapgate.gate.models import (
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
    from tapgate.gate.bus import EventBus
    from tapgate.gate.clock import Clock, ManualClock, SystemClock
    from tapgate.gate.directory import Approver, Directory
    from tapgate.gate.gate import Gate
    from tapgate.gate.records import new_id

__all__ = [
    "CONTACT_TOOL",
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
    "Request",
    "RequestStatus",
    "Risk",
    "Scope",
    "SystemClock",
    "Ticket",
    "ToolCall",
    "Verdict",
    "args_digest",
    "canonical_json",
    "new_id",
]

_LAZY = {
    "Approver": "tapgate.gate.directory",
    "Clock": "tapgate.gate.clock",
    "Directory": "tapgate.gate.directory",
    "EventBus": "tapgate.gate.bus",
    "Gate": "tapgate.gate.gate",
    "ManualClock": "tapgate.gate.clock",
    "SystemClock": "tapgate.gate.clock",
    "new_id": "tapgate.gate.records",
}


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
