"""The ``agents`` section: who may use the HTTP API, each with its own bearer token.

The checks across entries (names and tokens unique) live here beside the
model; :class:`~tapgate.bot.config.model.Config` runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from tapgate.bot.config.errors import format_path
from tapgate.bot.config.fields import NonEmptyStr, Section, Token
from tapgate.errors import ConfigError

__all__ = ["AgentConfig", "check_agents"]


class AgentConfig(Section):
    """An agent allowed to use the HTTP API, identified by its own bearer token."""

    name: NonEmptyStr
    token: Token


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
