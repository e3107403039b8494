"""tapgate: a self-hosted approval gate for AI-agent tool calls.

The names here are what an agent author needs in-process: build a
:class:`Policy` from a :class:`PolicySpec`, open a :class:`Store`, and ask a
:class:`Gate` to ``check`` each :class:`ToolCall`. Deployments use the
``tapgate`` command (see ``tapgate.cli``).

The domain names load on first use (PEP 562): ``tapgate.client`` and the
agent-side commands (``tapgate hook claude-code`` runs on every Claude Code
tool call) import only the records they need, not the store, SQLAlchemy and
Alembic behind ``Gate``.
"""

from typing import TYPE_CHECKING

from tapgate._lazy import lazy_exports
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

if TYPE_CHECKING:
    from tapgate.gate import Approver, Decision, Directory, Gate, Request, Ticket, ToolCall
    from tapgate.policy import Policy, PolicySpec, Rule, ToolSpec
    from tapgate.store import Store

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(
            ("Approver", "Decision", "Directory", "Gate", "Request", "Ticket", "ToolCall"),
            "tapgate.gate",
        ),
        **dict.fromkeys(("Policy", "PolicySpec", "Rule", "ToolSpec"), "tapgate.policy"),
        "Store": "tapgate.store",
    },
    __all__,
)
