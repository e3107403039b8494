"""Adapters that put tapgate behind the agent frameworks' own approval hooks.

One module per framework (``tapgate.integrations.pydantic_ai``,
``.langgraph``, ``.openai_agents``, ``.claude_agent_sdk``), each a thin layer
over :mod:`tapgate.client`: it turns the framework's tool call into a
:class:`~tapgate.gate.models.ToolCall`, asks any gate with a ``check``
(``RemoteGate``, ``SyncRemoteGate``, the in-process ``Gate``), and turns the
:class:`~tapgate.gate.models.Decision` into the framework's answer, a denial
carrying the reason for the model. They never import the server.

This package imports none of them: a framework is loaded only when its
adapter module is imported, which is how an optional extra stays optional.
"""

from __future__ import annotations

__all__: list[str] = []
