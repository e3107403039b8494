"""The ``agents`` section: who may use the HTTP API, each with its own bearer token.

The checks across entries (names and tokens unique) live here beside the
model; :class:`~tapgate.config.model.Config` runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import NonNegativeInt

from tapgate.config.errors import format_path
from tapgate.config.fields import NonEmptyStr, Section, Token
from tapgate.errors import ConfigError
from tapgate.policy.limits import AgentLimits

__all__ = ["DEFAULT_ASKS_PER_MINUTE", "DEFAULT_MAX_PENDING", "AgentConfig", "check_agents"]


DEFAULT_MAX_PENDING = 50
"""Requests one agent may have waiting for a human at once: far above a working agent's
few, low enough that a runaway loop cannot bury its approvers."""
DEFAULT_ASKS_PER_MINUTE = 60
"""New requests one agent may create in any 60 seconds: a human cannot read more."""


class AgentConfig(Section):
    """An agent allowed to use the HTTP API, identified by its own bearer token.

    ``max_pending`` and ``asks_per_minute`` bound how much it may ask (see
    :mod:`tapgate.policy.limits`); ``0`` lifts a limit (``null`` in this config
    means "the default", as everywhere).
    """

    name: NonEmptyStr
    token: Token
    max_pending: NonNegativeInt = DEFAULT_MAX_PENDING
    asks_per_minute: NonNegativeInt = DEFAULT_ASKS_PER_MINUTE
    owner: NonEmptyStr | None = None
    """The approver who runs this agent: with ``self_approval: false`` they may not approve it."""

    def limits(self) -> AgentLimits:
        """The limits the gate enforces for this agent (0: none)."""
        return AgentLimits(
            max_pending=self.max_pending or None, asks_per_minute=self.asks_per_minute or None
        )


def check_agents(agents: Sequence[AgentConfig]) -> None:
    names: dict[str, int] = {}
    tokens: dict[str, int] = {}
    for index, agent in enumerate(agents):
        if agent.name in names:
            raise ConfigError(
                format_path(("agents", index, "name")),
                f"duplicate agent name {agent.name!r} (also agents[{names[agent.name]}])",
            )
        token = agent.token.get_secret_value()
        if token in tokens:
            raise ConfigError(
                format_path(("agents", index, "token")),
                f"duplicate token (agents[{tokens[token]}] uses the same one)",
            )
        names[agent.name] = index
        tokens[token] = index
