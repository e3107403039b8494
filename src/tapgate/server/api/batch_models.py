"""The batch routes' wire format: several tool calls in, one state per call out.

Limits (documented in docs/http-api.md): at most
:data:`~tapgate.gate.batching.MAX_CALLS` calls per batch (a 400 past it), and
the server's body limit of 1 MB for the whole batch (a 413).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from tapgate.gate.batching import MAX_CALLS
from tapgate.gate.models import Risk
from tapgate.server.api.models import Body, Name, ToolCallOut, ToolName, WaitSeconds

__all__ = ["BatchCallIn", "BatchIn", "BatchOut"]


class BatchCallIn(Body):
    """One call of a batch: what ``POST /v1/tool-calls`` takes, without session and wait."""

    tool: ToolName
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    risk: Risk | None = None


class BatchIn(Body):
    """``POST /v1/tool-call-batches``: the calls of one model turn, a session, how long to wait."""

    calls: list[BatchCallIn] = Field(min_length=1, max_length=MAX_CALLS)
    session: Name | None = None
    wait: WaitSeconds | None = None


class BatchOut(BaseModel):
    """A batch: ``pending`` while any call waits for a human; its calls in the agent's order."""

    model_config = ConfigDict(extra="forbid", strict=True)

    id: str
    status: Literal["pending", "decided"]
    calls: list[ToolCallOut]
