"""``GET /v1/tools/{tool}/sandbox``: the tool's sandbox, as ``tapgate run --sandbox`` applies it.

The server owns the sandbox config for the same reason it owns the policy:
the agent that runs ``tapgate run`` is the party being confined, so it must
not be the one that says how far. The client asks for the tool it is about to
ask approval for, before asking (a sandbox that cannot be applied then fails
before any approver is pinged), and applies exactly what it is told.

The section comes from the tool config the policy itself uses for the tool
(``Policy.tool_spec``: an exact name first, then globs in YAML order), so the
sandbox and the verdict always read the same entry of ``policy.tools``. The
route sits behind the ``/v1`` middleware like every agent route: a bearer
token is needed, and errors are JSON. It is registered with the other agent
routes in :func:`tapgate.server.api.agent.setup_api`.
"""

from __future__ import annotations

from aiohttp import web

from tapgate.config import format_path
from tapgate.server.api.middleware import model_response
from tapgate.server.api.models import SandboxOut
from tapgate.server.keys import CONFIG, GATE

__all__ = ["get_tool_sandbox"]


async def get_tool_sandbox(request: web.Request) -> web.Response:
    """``GET /v1/tools/{tool}/sandbox``: the tool's section, or the defaults when it has none."""
    tool = request.match_info["tool"]
    spec = request.app[GATE].policy.tool_spec(tool)
    config = request.app[CONFIG].policy.tools.get(spec.name) if spec is not None else None
    section = config.sandbox if config is not None else None
    if section is None:
        out = SandboxOut(tool=tool, network=False, writable=[], hidden=[], source=None)
    else:
        assert spec is not None  # a section was found through the spec
        out = SandboxOut(
            tool=tool,
            network=section.network,
            writable=list(section.writable),
            hidden=list(section.hidden),
            source=format_path(("policy", "tools", spec.name, "sandbox")),
        )
    return model_response(out)
