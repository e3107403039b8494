"""The answer to a call decided at once (by policy or a grant), rendered once per distinct answer.

Most calls an agent makes are allowed by policy, and what the agent is told
then depends only on the decision (the policy engine shares one per rule), the
tool and the session: no id, no time. Building and validating the response
model and serialising it again for each such call was a tenth of the server's
work on the allow path, for the same bytes every time. The text is rendered
by the same model the first time (so it cannot drift from the OpenAPI
schema) and kept in a bounded table; a re-issue that consumed an earlier
approval names that request, so it is rendered each time.
"""

from __future__ import annotations

from aiohttp import web

from tapgate.gate.models import Decision, ToolCall
from tapgate.server.api.middleware import model_response
from tapgate.server.api.models import tool_call_from_decision

__all__ = ["at_once_response"]

_KEPT = 4096
"""Distinct answers kept (a few hundred bytes each); the table starts afresh when full."""

_rendered: dict[tuple[Decision, str, str | None], str] = {}


def at_once_response(decision: Decision, call: ToolCall, *, consumed: str | None) -> web.Response:
    """The 200 for ``call`` decided at once; ``consumed``: the earlier approval it used, if any."""
    if consumed is not None:
        return model_response(tool_call_from_decision(decision, call, consumed=consumed))
    key = (decision, call.tool, call.session)
    text = _rendered.get(key)
    if text is None:
        if len(_rendered) >= _KEPT:
            _rendered.clear()
        text = _rendered[key] = tool_call_from_decision(decision, call).model_dump_json()
    return web.json_response(text=text)
