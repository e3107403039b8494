"""``tapgate acp-proxy``: an ACP agent behind tapgate, for an editor that launches the proxy.

The editor (the ACP client: Zed, a JetBrains IDE...) starts this proxy where
it would start the agent; the proxy starts the agent and moves every
JSON-RPC message between the two as it came, ids included, with one
exception: the agent's ``session/request_permission`` is answered by
tapgate (:mod:`._acp_decide`) instead of the editor's prompt. The editor's
``session/cancel`` withdraws the requests of that session still waiting for
tapgate (their answer is then ``cancelled``, as ACP asks of a client) and
goes on to the agent.

``ask_locally``: the request also goes to the editor, and the first answer
wins. tapgate first: the editor's prompt is withdrawn with ACP's
``$/cancel_request`` and its late answer dropped. The editor first: its
answer goes to the agent and the tapgate request is withdrawn.

Framing and the intercepted message's shapes are the ``agent-client-
protocol`` package's (``NdjsonTransport``, ``acp.schema``); messages passed
through are never validated, so whatever a newer agent or editor sends gets
through unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from acp._transport import NdjsonTransport, Transport
from acp.stdio import stdio_streams
from acp.task import MessageSender, TaskSupervisor
from acp.transports import spawn_stdio_transport

from tapgate.client._acp_decide import CANCELLED, answer
from tapgate.client._remote import RemoteGate

__all__ = ["PERMISSION", "AcpProxy", "serve_acp_proxy"]

PERMISSION = "session/request_permission"
_CANCEL = "session/cancel"
_CANCEL_REQUEST = "$/cancel_request"
_LIMIT = 64 << 20
"""Bytes one message may take (a file's content travels inside one)."""


@dataclass
class _Asked:
    """One permission request the proxy is answering: its session and who answers it."""

    session: str | None
    task: asyncio.Task[None]
    local: asyncio.Future[dict[str, Any]] | None = None
    """With ``ask_locally``: the editor's answer, once it came."""


@dataclass
class AcpProxy:
    """Both sides' transports and the permission requests in flight."""

    editor: Transport
    agent: Transport
    gate: RemoteGate
    ask_locally: bool = False
    asked: dict[Any, _Asked] = field(default_factory=dict)
    dropped: set[Any] = field(default_factory=set)
    """Ids of requests the editor was shown and that were answered without it: its late
    answer is dropped, never a second answer to the agent."""

    async def run(self) -> None:
        """Move messages until either side hangs up."""
        pumps = [
            asyncio.create_task(self._pump(self.editor, self._from_editor)),
            asyncio.create_task(self._pump(self.agent, self._from_agent)),
        ]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in [*pumps, *(asked.task for asked in self.asked.values())]:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

    async def _pump(self, source: Transport, handle: Any) -> None:
        while (message := await source.receive()) is not None:
            await handle(message)

    async def _from_agent(self, message: dict[str, Any]) -> None:
        if message.get("method") != PERMISSION or "id" not in message:
            await self.editor.send(message)
            return
        params = message.get("params")
        session = params.get("sessionId") if isinstance(params, dict) else None
        local = asyncio.get_running_loop().create_future() if self.ask_locally else None
        task = asyncio.create_task(self._answer(message["id"], params))
        self.asked[message["id"]] = _Asked(session=session, task=task, local=local)
        if local is not None:
            await self.editor.send(message)

    async def _from_editor(self, message: dict[str, Any]) -> None:
        if "method" not in message and message.get("id") in self.dropped:
            self.dropped.discard(message.get("id"))
            return
        asked = self.asked.get(message.get("id")) if "method" not in message else None
        if asked is not None and asked.local is not None:
            if not asked.local.done():  # the editor's answer to a request it was shown
                asked.local.set_result(message)
            return
        if message.get("method") == _CANCEL:
            params = message.get("params")
            session = params.get("sessionId") if isinstance(params, dict) else None
            for pending in list(self.asked.values()):
                if pending.session == session:
                    pending.task.cancel()
        await self.agent.send(message)

    async def _answer(self, request_id: Any, params: Any) -> None:
        """Answer the agent's request ``request_id``: tapgate's answer, or the editor's first."""
        asked = self.asked[request_id]
        remote = asyncio.ensure_future(answer(self.gate, params))
        waiting: set[asyncio.Future[Any]] = {remote} | ({asked.local} if asked.local else set())
        reply: dict[str, Any]
        try:
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if remote in done:
                reply = {"jsonrpc": "2.0", "id": request_id, "result": remote.result()}
                if asked.local is not None:  # withdraw the editor's own prompt
                    self.dropped.add(request_id)
                    await self.editor.send(_cancel_request(request_id))
            else:
                assert asked.local is not None
                reply = asked.local.result()
        except asyncio.CancelledError:  # session/cancel: the turn is over
            reply = {"jsonrpc": "2.0", "id": request_id, "result": CANCELLED}
            if asked.local is not None and not asked.local.done():
                self.dropped.add(request_id)  # the editor answers its prompt too
        finally:
            remote.cancel()  # withdraws a request still waiting in tapgate
            with contextlib.suppress(BaseException):
                await remote
            self.asked.pop(request_id, None)
        await self.agent.send(reply)


def _cancel_request(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": _CANCEL_REQUEST, "params": {"requestId": request_id}}


async def serve_acp_proxy(
    command: Sequence[str],
    *,
    gate: RemoteGate,
    token_env: str,
    ask_locally: bool = False,
) -> int:
    """Run the agent ``command`` behind the proxy on this process's stdio; its exit status.

    The agent gets this process's environment but the agent token
    (``token_env``): the proxy asks tapgate, the agent has no need to.
    """
    env = {name: value for name, value in os.environ.items() if name != token_env}
    supervisor = TaskSupervisor(source="tapgate.acp-proxy")
    reader, writer = await stdio_streams(limit=_LIMIT)
    editor = NdjsonTransport(reader, MessageSender(writer, supervisor))
    async with spawn_stdio_transport(
        command[0], *command[1:], env=env, stderr=None, limit=_LIMIT
    ) as (agent_out, agent_in, process):
        agent = NdjsonTransport(agent_out, MessageSender(agent_in, supervisor))
        async with gate:
            await AcpProxy(editor=editor, agent=agent, gate=gate, ask_locally=ask_locally).run()
    await supervisor.shutdown()
    return process.returncode or 0
