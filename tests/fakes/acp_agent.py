"""A real ACP agent (the ``agent-client-protocol`` package's ``run_agent``) for the proxy's tests.

Run as a script over stdio. Each prompt turn asks permission for a shell
command and then for a file write, with option ids of its own, and tells
the client what it was answered as an agent message: ``execute -> ID`` (or
``execute -> cancelled``). A turn whose permission was cancelled ends with
``cancelled``. The prompt's text, if it is ``ping``, is answered without
asking anything: a forwarded message and nothing else.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from acp import PROTOCOL_VERSION, Agent, Client, run_agent, text_block, update_agent_message
from acp.schema import (
    AllowedOutcome,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

OPTIONS = [
    PermissionOption(option_id="yes-once", name="Allow", kind="allow_once"),
    PermissionOption(option_id="yes-always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="no-once", name="Reject", kind="reject_once"),
    PermissionOption(option_id="no-always", name="Always reject", kind="reject_always"),
]
CALLS = [
    ToolCallUpdate(
        tool_call_id="call-1",
        title="Run make deploy",
        kind="execute",
        raw_input={"command": "make deploy", "cwd": "/work/app"},
    ),
    ToolCallUpdate(
        tool_call_id="call-2",
        title="Write src/app.py",
        kind="edit",
        raw_input={"path": "/work/app/src/app.py", "content": "print('hi')\n"},
    ),
]


class Asker:
    """Asks permission for each of ``CALLS`` in every prompt turn (the methods it needs of
    ``acp.Agent``; the package calls what a class has)."""

    client: Client

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=PROTOCOL_VERSION)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=f"sess-{cwd.rstrip('/').rsplit('/', 1)[-1]}")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if getattr(prompt[0], "text", "") == "ping":
            await self._say(session_id, "pong")
            return PromptResponse(stop_reason="end_turn")
        for call in CALLS:
            answer = await self.client.request_permission(
                session_id=session_id, tool_call=call, options=OPTIONS
            )
            outcome = answer.outcome
            said = outcome.option_id if isinstance(outcome, AllowedOutcome) else "cancelled"
            await self._say(session_id, f"{call.kind} -> {said}")
            if said == "cancelled":
                return PromptResponse(stop_reason="cancelled")
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def _say(self, session_id: str, text: str) -> None:
        update = update_agent_message(text_block(text))
        await self.client.session_update(session_id=session_id, update=update)


if __name__ == "__main__":
    asyncio.run(run_agent(cast(Agent, Asker())))
