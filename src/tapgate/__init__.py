"""tapgate: a self-hosted approval gate for AI-agent tool calls.

The names here are what an agent author needs in-process: build a
:class:`Policy` from a :class:`PolicySpec`, open a :class:`Store`, and ask a
:class:`Gate` to ``check`` each :class:`ToolCall`. Deployments use the
``tapgate`` command (see ``tapgate.bot``).

The domain names load on first use (PEP 562): ``tapgate.client`` and the
agent-side commands (``tapgate hook claude-code`` runs on every Claude Code
tool call) import only the records they need, not the store, SQLAlchemy and
Alembic behind ``Gate``.
"""

from typing import TYPE_CHECKING, Any

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

_LAZY = frozenset(
    {
        "Approver",
        "Decision",
        "Directory",
        "Gate",
        "Policy",
        "PolicySpec",
        "Request",
        "Rule",
        "Store",
        "Ticket",
        "ToolCall",
        "ToolSpec",
    }
)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'tapgate' has no attribute {name!r}")
    import tapgate.core

    value = getattr(tapgate.core, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
