"""tapgate: a self-hosted approval gate for AI-agent tool calls.

The names here are what an agent author needs in-process: build a
:class:`Policy` from a :class:`PolicySpec`, open a :class:`Store`, and ask a
:class:`Gate` to ``check`` each :class:`ToolCall`. Deployments use the
``tapgate`` command (see ``tapgate.bot``).
"""

from tapgate.core import (
    Approver,
    Decision,
    Directory,
    Gate,
    Policy,
    PolicySpec,
    Request,
    Rule,
    Store,
    Ticket,
    ToolCall,
    ToolSpec,
)
from tapgate.errors import (
    AlreadyResolved,
    ConfigError,
    DeliveryError,
    DuplicateEvent,
    NotAnApprover,
    PermanentDeliveryError,
    PolicyError,
    RequestExpired,
    RequestNotFound,
    ResolveError,
    StoreError,
    TapgateError,
)

__all__ = [
    "AlreadyResolved",
    "Approver",
    "ConfigError",
    "Decision",
    "DeliveryError",
    "Directory",
    "DuplicateEvent",
    "Gate",
    "NotAnApprover",
    "PermanentDeliveryError",
    "Policy",
    "PolicyError",
    "PolicySpec",
    "Request",
    "RequestExpired",
    "RequestNotFound",
    "ResolveError",
    "Rule",
    "Store",
    "StoreError",
    "TapgateError",
    "Ticket",
    "ToolCall",
    "ToolSpec",
    "__version__",
]

__version__ = "0.1.0"
