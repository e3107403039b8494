"""The agent side of tapgate: remote gates over the HTTP API, a tool wrapper, two commands.

``RemoteGate`` / ``SyncRemoteGate`` let an agent that runs apart from the
server ask it exactly as it would ask an in-process ``Gate``; ``guard`` wraps a
tool function so that it runs only when a gate (any of the three) allows it.
``claude_code_hook`` and ``run_approved`` are the logic of ``tapgate hook
claude-code`` and ``tapgate run``, callable from Python for custom wrappers;
``hook_refusal`` / ``hook_fallback`` build the hook's answer when it cannot
ask the server at all, and ``DEFAULT_HOOK_TIMEOUT`` / ``DEFAULT_RETRY_FOR`` /
``EXIT_CONFIG`` are the commands' defaults that wrappers should share.
This package talks to the server only through HTTP: httpx for the gates, the
standard library's ``http.client`` for the commands (which start on every
tool call); it imports the domain records and errors, never the server,
webhooks or notifiers. Its names load on first use (PEP 562), so that
``tapgate hook claude-code`` imports neither httpx nor asyncio.

``serve_mcp_proxy`` (and its ``McpProxyOptions``) is ``tapgate mcp-proxy``:
it needs the ``mcp`` extra, and loads on first use like every other name.
"""

from typing import TYPE_CHECKING

from tapgate._lazy import lazy_exports

if TYPE_CHECKING:
    from tapgate.client._batch import (
        AsyncBatchChecker,
        SyncBatchChecker,
        run_batch,
        run_batch_sync,
    )
    from tapgate.client._errors import (
        ArgumentsChanged,
        ClientError,
        GuardError,
        ToolDenied,
        Unauthorized,
    )
    from tapgate.client._guard import AsyncChecker, Denied, SyncChecker, guard
    from tapgate.client._hook import (
        DEFAULT_HOOK_TIMEOUT,
        claude_code_hook,
        hook_fallback,
        hook_refusal,
    )
    from tapgate.client._remote import LONG_POLL, RemoteGate, SyncRemoteGate
    from tapgate.client._retrying import DEFAULT_RETRY_FOR
    from tapgate.client._run import EXIT_CONFIG, run_approved

if TYPE_CHECKING:
    from tapgate.client._mcp_proxy import McpProxyOptions, serve_mcp_proxy

__all__ = [
    "DEFAULT_HOOK_TIMEOUT",
    "DEFAULT_RETRY_FOR",
    "EXIT_CONFIG",
    "LONG_POLL",
    "ArgumentsChanged",
    "AsyncBatchChecker",
    "AsyncChecker",
    "ClientError",
    "Denied",
    "GuardError",
    "McpProxyOptions",
    "RemoteGate",
    "SyncBatchChecker",
    "SyncChecker",
    "SyncRemoteGate",
    "ToolDenied",
    "Unauthorized",
    "claude_code_hook",
    "guard",
    "hook_fallback",
    "hook_refusal",
    "run_approved",
    "run_batch",
    "run_batch_sync",
    "serve_mcp_proxy",
]

_LAZY = {
    **dict.fromkeys(
        ("ArgumentsChanged", "ClientError", "GuardError", "ToolDenied", "Unauthorized"),
        "tapgate.client._errors",
    ),
    **dict.fromkeys(("AsyncChecker", "Denied", "SyncChecker", "guard"), "tapgate.client._guard"),
    **dict.fromkeys(
        ("DEFAULT_HOOK_TIMEOUT", "claude_code_hook", "hook_fallback", "hook_refusal"),
        "tapgate.client._hook",
    ),
    **dict.fromkeys(("LONG_POLL", "RemoteGate", "SyncRemoteGate"), "tapgate.client._remote"),
    "DEFAULT_RETRY_FOR": "tapgate.client._retrying",
    **dict.fromkeys(("EXIT_CONFIG", "run_approved"), "tapgate.client._run"),
    **dict.fromkeys(
        ("AsyncBatchChecker", "SyncBatchChecker", "run_batch", "run_batch_sync"),
        "tapgate.client._batch",
    ),
    # needs the mcp extra: loaded on first use, like the rest
    **dict.fromkeys(("McpProxyOptions", "serve_mcp_proxy"), "tapgate.client._mcp_proxy"),
}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
