"""The public interface and the layering of docs/architecture.md, pinned.

A change to what a package exports, or an import that points up a layer,
fails here first, so it is made on purpose and reviewed as such.
"""

from __future__ import annotations

import ast
import functools
import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import tapgate

SRC = Path(tapgate.__file__).parent

EXPORTS: dict[str, set[str]] = {
    "tapgate": {
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
    },
    "tapgate.gate": {
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
    },
    "tapgate.policy": {
        "DEFAULT_RISK_ACTIONS",
        "HAZARD_RULE",
        "PATH_HAZARD_RULE",
        "Policy",
        "PolicySpec",
        "PolicyVerdict",
        "Rule",
        "ToolSpec",
    },
    "tapgate.decisions": set(),
    "tapgate.terminal": set(),
    "tapgate.delivery": {
        "ApprovalView",
        "BatchNotifier",
        "Dispatcher",
        "Notifier",
        "Receipt",
        "RecordingNotifier",
        "RetryPolicy",
        "outbox_backoff",
        "present",
    },
    "tapgate.channels": {
        "AddressField",
        "Channel",
        "ChannelDefaults",
        "ChannelHost",
        "CheckResult",
        "ConversationBook",
        "DeliveryHost",
        "Handler",
        "Receiver",
        "Route",
    },
    "tapgate.channels.console": {"channel"},
    "tapgate.channels.email": {"channel"},
    "tapgate.channels.line": {"channel"},
    "tapgate.channels.slack": {"channel"},
    "tapgate.server": {"build_app"},
    "tapgate.store": {
        "Created",
        "GrantKey",
        "Outbox",
        "OutboxItem",
        "Store",
        "Transition",
        "normalize_url",
    },
    "tapgate.server.api": {"setup_api", "setup_humanlayer"},
    "tapgate.cli": {"main"},
    "tapgate.config": {
        "AgentConfig",
        "AgentPolicyConfig",
        "ApproverConfig",
        "ChannelsConfig",
        "Config",
        "PolicyConfig",
        "RuleConfig",
        "SandboxConfig",
        "ServerConfig",
        "StoreConfig",
        "ToolConfig",
        "display_url",
        "format_path",
        "load_config",
        "load_store_config",
        "parse_config",
        "parse_duration",
    },
    "tapgate.client": {
        "ArgumentsChanged",
        "AsyncBatchChecker",
        "SyncBatchChecker",
        "run_batch",
        "run_batch_sync",
        "AsyncChecker",
        "ClientError",
        "DEFAULT_HOOK_TIMEOUT",
        "DEFAULT_RETRY_FOR",
        "Denied",
        "EXIT_CONFIG",
        "GuardError",
        "LONG_POLL",
        "McpProxyOptions",
        "RemoteGate",
        "SyncChecker",
        "SyncRemoteGate",
        "ToolDenied",
        "Unauthorized",
        "claude_code_hook",
        "guard",
        "hook_fallback",
        "hook_refusal",
        "run_approved",
        "serve_mcp_proxy",
    },
    "tapgate.integrations": set(),
}

# The adapters import their framework (an optional extra) on import: pinned
# apart, so that without the extra they skip instead of failing.
INTEGRATION_EXPORTS: dict[str, set[str]] = {
    "tapgate.integrations.pydantic_ai": {"ApprovalToolset", "deferred_handler", "resolve_deferred"},
    "tapgate.integrations.langgraph": {"ainvoke_gated", "decide_interrupts"},
    "tapgate.integrations.openai_agents": {"decide_interruptions", "run_gated"},
    "tapgate.integrations.claude_agent_sdk": {"can_use_tool", "pre_tool_use_hook"},
}

# What each layer may import from tapgate itself, and which outside packages it
# must not import (docs/architecture.md draws these layers). The domain
# (policy, gate, decisions, store, delivery) imports no channel, no server, no
# CLI and no config; channels are checked apart below (no channel imports
# another; a platform's SDK only in its own folder).
_DOMAIN_SDKS = {"linebot", "slack_sdk", "slack_bolt", "yaml"}
ALLOWED_INTERNAL = {
    "client": {"tapgate.client", "tapgate.gate.models", "tapgate.errors", "tapgate._lazy"},
    "policy": {"tapgate.policy", "tapgate.gate.models", "tapgate.errors", "tapgate._lazy"},
    "gate": {"tapgate.gate", "tapgate.policy", "tapgate.store", "tapgate.errors", "tapgate._lazy"},
    "store": {"tapgate.store", "tapgate.gate", "tapgate.policy", "tapgate.errors"},
    "decisions": {
        "tapgate.decisions",
        "tapgate.gate",
        "tapgate.policy",
        "tapgate.store",
        "tapgate.errors",
    },
    "delivery": {
        "tapgate.delivery",
        "tapgate.decisions",
        "tapgate.gate",
        "tapgate.policy",
        "tapgate.store",
        "tapgate.errors",
    },
    "terminal": {"tapgate.terminal", "tapgate.delivery", "tapgate.gate", "tapgate.policy"},
    "channels": {
        "tapgate.channels",
        "tapgate.config.fields",  # a channel's settings are config sections
        "tapgate.decisions",
        "tapgate.delivery",
        "tapgate.gate",
        "tapgate.policy",
        "tapgate.terminal",
        "tapgate.errors",
        "tapgate._lazy",
    },
    "config": {
        "tapgate.config",
        "tapgate.channels.contract",
        "tapgate.channels.registry",
        "tapgate.channels",
        "tapgate.gate",
        "tapgate.policy",
        "tapgate.errors",
    },
    "server": {"tapgate"},
    "cli": {"tapgate"},
    "__main__": {"tapgate.cli"},  # python -m tapgate: the console script's entry, no more
    # The agent side of the frameworks: the client and the records, never the server.
    "integrations": {
        "tapgate.client",
        "tapgate.gate.models",
        "tapgate.errors",
        "tapgate.integrations",
    },
}
FORBIDDEN_EXTERNAL = {
    "client": {"aiohttp", "yaml", "linebot", "slack_sdk", "slack_bolt"},
    "policy": _DOMAIN_SDKS | {"aiohttp", "httpx", "tenacity", "sqlalchemy"},
    "gate": _DOMAIN_SDKS | {"aiohttp", "httpx", "tenacity", "sqlalchemy"},
    "store": _DOMAIN_SDKS | {"aiohttp", "httpx"},
    "decisions": _DOMAIN_SDKS | {"aiohttp", "httpx"},
    "delivery": _DOMAIN_SDKS,
    "terminal": _DOMAIN_SDKS | {"aiohttp", "sqlalchemy"},
    "channels": {"yaml"},
    "config": {"aiohttp", "sqlalchemy", "alembic", "httpx", "prometheus_client"},
    "server": set(),
    "cli": set(),
    "__main__": set(),
    "integrations": {"aiohttp", "yaml", "linebot", "slack_sdk", "slack_bolt", "sqlalchemy"},
}
PLATFORM_SDKS = {
    "linebot": "line",
    "slack_sdk": "slack",
    "slack_bolt": "slack",
    "aiosmtplib": "email",
    "jwt": "teams",
}
"""Each platform's SDK, and the one channel folder that may import it."""


@functools.cache
def _modules() -> list[str]:
    found = ["tapgate"]
    for info in pkgutil.walk_packages([str(SRC)], prefix="tapgate."):
        if ".migrations" not in info.name:
            found.append(info.name)
    return sorted(found)


@functools.cache
def _tree(module: str) -> ast.Module:
    """``module``'s parsed source, parsed once for the many tests that read it."""
    return ast.parse(_source(module))


@functools.cache
def _imports(module: str) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return frozenset(names)


@pytest.mark.parametrize(("package", "expected"), sorted(EXPORTS.items()))
def test_package_exports_are_pinned(package: str, expected: set[str]) -> None:
    module = importlib.import_module(package)
    assert set(module.__all__) == expected
    for name in module.__all__:
        assert hasattr(module, name), f"{package}.__all__ names missing {name}"


@pytest.mark.parametrize(("module", "expected"), sorted(INTEGRATION_EXPORTS.items()))
def test_integration_exports_are_pinned(module: str, expected: set[str]) -> None:
    assert set(_import(module).__all__) == expected


def test_every_integration_module_is_pinned() -> None:
    adapters = {m for m in _modules() if m.startswith("tapgate.integrations.")}
    adapters = {m for m in adapters if not m.rsplit(".", 1)[-1].startswith("_")}
    assert set(INTEGRATION_EXPORTS) <= adapters


def _import(module: str) -> ModuleType:
    """``module``, or a skip when it is an adapter whose framework is not installed."""
    if module.startswith("tapgate.integrations."):
        try:
            return importlib.import_module(module)
        except ImportError as exc:
            if os.environ.get("TAPGATE_REQUIRE_INTEGRATIONS") == "1":
                raise
            pytest.skip(f"{module}: {exc}")
    return importlib.import_module(module)


@pytest.mark.parametrize(
    "module", [m for m in _modules() if not m.rsplit(".", 1)[-1].startswith("_")]
)
def test_every_public_module_declares_all(module: str) -> None:
    assert hasattr(_import(module), "__all__"), module


@pytest.mark.parametrize("module", [m for m in _modules() if m.count(".") >= 1])
def test_layering(module: str) -> None:
    layer = module.split(".")[1]
    if layer not in ALLOWED_INTERNAL:
        assert layer in ("errors", "_lazy")  # beside the layers, importable by all
        assert not any(i.startswith("tapgate") for i in _imports(module))
        return
    for name in _imports(module):
        top = name.split(".")[0]
        if top == "tapgate":
            assert any(name == a or name.startswith(a + ".") for a in ALLOWED_INTERNAL[layer]), (
                f"{module} imports {name}: {layer} may import only {ALLOWED_INTERNAL[layer]}"
            )
        elif top not in sys.stdlib_module_names:
            assert top not in FORBIDDEN_EXTERNAL[layer], f"{module} must not import {name}"


def test_the_hook_fast_path_imports_nothing_but_built_in_modules() -> None:
    """``python -I -S _fast_hook.py`` is fast because of this (run-time: test_fast_hook)."""
    allowed = {"__future__", "os", "sys", "_json", "_socket", "math", "tempfile", "binascii"}
    allowed |= {"tapgate.client", "_hook_answer"}  # its sibling: the package's, or beside it
    for module in ("tapgate.client._fast_hook", "tapgate.client._hook_answer"):
        imported = _imports(module) - {"collections.abc", "typing"}  # type checking only
        assert imported <= allowed, module


# Inside the server: what the HTTP APIs and the web inbox may import of it. The
# APIs never reach into the CLI nor a channel; the web inbox uses the app's keys,
# the API's handler type and shutdown event, and the domain, nothing else.
SERVER_ALLOWED_INTERNAL = {
    "api": {"tapgate.server.api", "tapgate.server.keys"},
    "web_inbox": {
        "tapgate.server.web_inbox",
        "tapgate.server.keys",
        "tapgate.server.api.middleware",
        "tapgate.server.api.stream",
    },
}


def _server_package(module: str) -> str | None:
    """``api`` for ``tapgate.server.api.stream`` (and ``tapgate.server.api``); None beside them."""
    parts = module.split(".")
    return parts[2] if len(parts) >= 3 and parts[:2] == ["tapgate", "server"] else None


def test_every_server_sub_package_has_rules() -> None:
    for module in _modules():
        package = _server_package(module)
        if package is not None and module.count(".") >= 3:
            assert package in SERVER_ALLOWED_INTERNAL, f"{module}: add its rules here"


@pytest.mark.parametrize(
    "module", [m for m in _modules() if _server_package(m) in SERVER_ALLOWED_INTERNAL]
)
def test_server_sub_package_layering(module: str) -> None:
    package = _server_package(module)
    assert package is not None
    allowed = SERVER_ALLOWED_INTERNAL[package]
    for name in _imports(module):
        if name.startswith("tapgate.server"):
            assert any(name == a or name.startswith(a + ".") for a in allowed), (
                f"{module} imports {name}: tapgate.server.{package} may import only {allowed}"
            )
        assert not name.startswith(("tapgate.cli", "yaml")), f"{module} must not import {name}"


def test_the_server_never_imports_the_cli() -> None:
    """App assembly, health, metrics, heartbeat: the server never depends on its command line."""
    server = [m for m in _modules() if m.startswith("tapgate.server")]
    assert "tapgate.server.app" in server
    for module in server:
        assert not any(i.startswith("tapgate.cli") for i in _imports(module)), module


def _channel_of(module: str) -> str | None:
    """``slack`` for ``tapgate.channels.slack.blocks``; None for the contract's own modules."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["tapgate", "channels"]:
        spec = importlib.util.find_spec(".".join(parts[:3]))
        if spec is not None and spec.submodule_search_locations is not None:
            return parts[2]
    return None


def test_the_built_in_channels_register_through_the_entry_point_group() -> None:
    """Exactly as a third-party channel would: the registry finds them, nothing imports them."""
    from tapgate.channels import registry

    built_in = {m.split(".")[2] for m in _modules() if _channel_of(m) is not None}
    assert built_in == {"console", "discord", "email", "line", "slack", "teams", "telegram"}
    assert built_in <= set(registry.names())
    for name in built_in:
        channel = registry.get(name)
        assert channel is not None and channel.name == name


@pytest.mark.parametrize("module", _modules())
def test_only_a_channel_imports_itself(module: str) -> None:
    """No channel imports another; nothing outside ``channels/<x>/`` imports channel ``x``."""
    own = _channel_of(module)
    for name in _imports(module):
        target = _channel_of(name)
        if target is not None:
            assert target == own, f"{module} imports {name}: go through the channel registry"


@pytest.mark.parametrize("module", _modules())
def test_a_platform_sdk_is_imported_only_by_its_channel(module: str) -> None:
    for name in _imports(module):
        channel = PLATFORM_SDKS.get(name.split(".")[0])
        if channel is not None:
            assert _channel_of(module) == channel, f"{module} must not import {name}"


def _loaded_by(code: str) -> set[str]:
    """The top-level packages a fresh interpreter has loaded after running ``code``."""
    code += "; import sys; print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    result = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    )
    return set(result.stdout.split())


SERVER_STACK = {"sqlalchemy", "alembic", "aiohttp", "linebot", "slack_sdk", "slack_bolt", "yaml"}
SERVER_STACK |= {"mcp", "mcp_types"}  # the MCP SDK is an optional extra, loaded by mcp-proxy only
"""What no agent-side command may load: those took the hook from 0.2 s to 0.9 s per call."""

AGENT_PATH_HEAVY = SERVER_STACK | {"httpx", "httpcore", "anyio", "asyncio", "pydantic", "certifi"}
"""Also not on the hook's and ``tapgate run``'s path: httpx and asyncio alone cost ~100 ms."""


def test_agent_side_commands_start_without_the_server_stack() -> None:
    """``tapgate hook claude-code`` runs on every Claude Code tool call: it must start fast.

    Loading the client and the console script must not pull in the store
    (SQLAlchemy, Alembic), the server (aiohttp), the chat SDKs or the config
    models.
    """
    loaded = _loaded_by("import tapgate.client, tapgate.cli, tapgate.cli.agent")
    assert not SERVER_STACK & loaded, SERVER_STACK & loaded


HOOK_PATH_HEAVY = AGENT_PATH_HEAVY | {"http", "email", "ssl", "subprocess", "shutil", "urllib3"}
"""Nor, on the hook's path, ``http.client`` (it loads ``email`` and ``ssl``), ``subprocess``
(the sandbox) or ``shutil`` (``argparse``'s terminal width): ~20 ms of every tool call."""


@pytest.mark.parametrize("command", ["hook", "run"])
def test_the_hook_and_run_start_without_httpx_or_asyncio(command: str) -> None:
    """What the hook and ``tapgate run`` load: their parser, their module, a socket.

    ``LeanGate.submit`` is what an allowed call asks (here of a closed port,
    so it fails to connect after loading everything a request needs): the
    whole path of an allowed call, without the network; an ``http://``
    server needs no TLS context either.
    """
    module = {"hook": "tapgate.client._hook", "run": "tapgate.client._run"}[command]
    loaded = _loaded_by(
        "import tapgate.cli; from tapgate.cli.parser import build_parser; "
        f"build_parser({command!r}); import {module}; "
        "from tapgate.client._lean import LeanGate; from tapgate.gate.models import ToolCall; "
        # retry_for=0: a refused connect is otherwise retried for a minute (a restart)
        "gate = LeanGate('http://127.0.0.1:9', 'token', retries=0, retry_for=0)\n"
        "try: gate.submit(ToolCall(tool='t', arguments={}, agent='a'))\n"
        "except Exception as e: assert 'Connect' in str(type(e).__name__) + str(e), e"
    )
    assert "socket" in loaded
    # tapgate run starts the command: subprocess and shutil (which) are its job.
    heavy = HOOK_PATH_HEAVY - ({"subprocess", "shutil"} if command == "run" else set())
    assert not heavy & loaded, heavy & loaded


@pytest.mark.parametrize("command", ["--version", "explain", "pending"])
def test_operator_commands_start_without_the_client(command: str) -> None:
    """``tapgate --version`` loads no parser; ``explain`` and ``pending`` no HTTP client."""
    if command == "--version":
        loaded = _loaded_by("import tapgate.cli")
        assert "argparse" not in loaded
    else:
        loaded = _loaded_by(
            f"from tapgate.cli.parser import build_parser; build_parser({command!r})"
        )
    assert not {"httpx", "asyncio", "http", "sqlalchemy", "yaml"} & loaded


def test_the_operator_commands_read_the_store_without_alembic() -> None:
    """``pending``, ``resolve``, ``grants``, ``audit``: Alembic is for migrating only."""
    loaded = _loaded_by(
        "import tapgate.cli.database, tapgate.cli.ops; "
        "from tapgate.store.engine import head_revision; head_revision()"
    )
    assert "sqlalchemy" in loaded
    assert "alembic" not in loaded


def test_a_store_at_head_opens_without_alembic(migrated_sqlite_url: str) -> None:
    """Every start opens the store; Alembic's pass that finds nothing to do cost ~6 ms."""
    loaded = _loaded_by(
        "import asyncio\nfrom tapgate.store import Store\n"
        "async def main() -> None:\n"
        f"    await (await Store.open({migrated_sqlite_url!r})).close()\n"
        "asyncio.run(main())"
    )
    assert "sqlalchemy" in loaded
    assert "alembic" not in loaded


@functools.cache
def _source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).read_text(encoding="utf-8")


_DOMAIN = (
    "tapgate.policy",
    "tapgate.gate",
    "tapgate.decisions",
    "tapgate.store",
    "tapgate.delivery",
)


@pytest.mark.parametrize("module", [m for m in _modules() if not m.startswith(_DOMAIN)])
def test_nothing_outside_the_domain_reaches_through_the_gate_into_the_store(module: str) -> None:
    """The gate is the one door to the store: ``gate.store.x`` above the domain means a
    missing method."""
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Attribute) and node.attr == "store":
            owner = ast.unparse(node.value)
            assert "gate" not in owner.lower() and owner != "g", f"{module}: {ast.unparse(node)}"


@pytest.mark.parametrize("module", [m for m in _modules() if _channel_of(m) is not None])
def test_channels_decide_only_through_the_decisions_package(module: str) -> None:
    """What a tap means is ``decisions.taps``: a channel never resolves, nor audits, on its own."""
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Attribute) and node.attr in ("resolve", "record_refusal"):
            raise AssertionError(f"{module} calls {ast.unparse(node)}: go through decisions.taps")


def test_the_words_a_tapper_reads_are_written_once() -> None:
    """Every refusal sentence lives in decisions.texts; a second copy would drift."""
    for sentence in ("You are not an approver", "This request does not exist"):
        owners = [m for m in _modules() if sentence in _source(m)]
        assert owners == ["tapgate.decisions.texts"], (sentence, owners)


def test_the_integrations_package_loads_no_framework() -> None:
    """The frameworks are optional extras: only importing an adapter module loads one."""
    code = (
        "import sys, tapgate, tapgate.client, tapgate.integrations; "
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.split()
    frameworks = {"pydantic_ai", "langchain", "langgraph", "agents", "claude_agent_sdk"}
    assert not frameworks & set(loaded), frameworks & set(loaded)
