"""The client's own exceptions, all under :class:`~tapgate.errors.TapgateError`.

The tree they add to tapgate's one exception tree::

    TapgateError
    ├── ClientError          the server answered with an error, or could not be reached
    │   └── Unauthorized     401: the token is missing, unknown or mistyped
    ├── ToolDenied           a guarded tool was denied (carries the Decision)
    ├── GuardError           a guard cannot run the check the way it was called
    └── SandboxUnavailable   ``tapgate run --sandbox`` cannot confine the command here

A 404 for a request id becomes :class:`~tapgate.errors.RequestNotFound` and a
409 on cancel becomes :class:`~tapgate.errors.AlreadyResolved`, the same errors
the in-process gate raises, so code written against one gate handles the other.
"""

from __future__ import annotations

from tapgate.errors import TapgateError
from tapgate.gate.models import Decision

__all__ = [
    "ArgumentsChanged",
    "ClientError",
    "GuardError",
    "SandboxUnavailable",
    "ToolDenied",
    "Unauthorized",
]


class ClientError(TapgateError):
    """The tapgate server refused a call, or could not be reached after the retries.

    ``status`` is the HTTP status (``None`` when no response came back) and
    ``code`` the server's machine-readable error code (``invalid_body``,
    ``unreachable`` for a transport failure), so handlers never parse messages.
    The message is the server's own.
    """

    def __init__(self, message: str, *, status: int | None, code: str) -> None:
        self.status = status
        self.code = code
        self.message = message
        super().__init__(message if status is None else f"{status} {code}: {message}")


class Unauthorized(ClientError):
    """401: a deployment mistake (wrong or missing token), never worth retrying."""


class ToolDenied(TapgateError):
    """A guarded tool was not allowed to run.

    It carries the whole :class:`~tapgate.gate.models.Decision`; ``reason`` is
    written for the model, so an agent framework can hand it back to the LLM
    and let it change course instead of failing the run.
    """

    def __init__(self, decision: Decision, *, tool: str) -> None:
        self.decision = decision
        self.tool = tool
        self.reason = decision.reason
        super().__init__(f"{tool} denied: {decision.reason}")


class GuardError(TapgateError):
    """A guard was used in a way it cannot serve (a sync tool with an async gate in a loop)."""


class ArgumentsChanged(GuardError):
    """A guarded tool's arguments changed between the check and the call: it did not run."""


class SandboxUnavailable(TapgateError):
    """The sandbox cannot be applied: no bwrap, bwrap cannot create it, or the server has none.

    ``reason`` is a sentence an operator can act on (install bubblewrap, allow
    user namespaces, upgrade the server); ``tapgate run`` prints it and exits
    71, or runs unsandboxed with it as a warning under ``--sandbox=best-effort``.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
