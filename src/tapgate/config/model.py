"""``Config``: the whole validated config file, and what the app reads from it.

The one object the app is assembled from. Its cross-section checks (agents,
approvers, policy references) run when it is built, and it hands the core
its records: ``policy_spec()`` and ``directory()``; ``agent_for_token``
is the constant-time token lookup both agent-facing APIs authenticate with.
Build it with :func:`~tapgate.config.loading.load_config` or
:func:`~tapgate.config.loading.parse_config`.
"""

from __future__ import annotations

import hmac
from functools import partial
from typing import Self

from pydantic import Field, model_validator

from tapgate.channels import registry
from tapgate.config.agents import AgentConfig, check_agents
from tapgate.config.approvers import ApproverConfig, check_approvers
from tapgate.config.channels import ChannelsConfig
from tapgate.config.fields import Section
from tapgate.config.policy import PolicyConfig, check_policy, policy_spec
from tapgate.config.reachable import check_reachable
from tapgate.config.server import ServerConfig, StoreConfig
from tapgate.errors import ConfigError, ConfigErrors
from tapgate.gate.directory import Approver, Directory
from tapgate.policy.rule_checks import problems
from tapgate.policy.rules import PolicySpec

__all__ = ["Config"]


class Config(Section):
    """The whole validated config file; the one object the app is assembled from.

    Build it with :func:`load_config` or :func:`parse_config`, which interpolate
    ``${VAR}`` first and turn errors into ``ConfigError``. Constructing it
    directly skips interpolation but still runs every check.
    """

    server: ServerConfig = Field(default_factory=ServerConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    agents: tuple[AgentConfig, ...] = ()
    approvers: tuple[ApproverConfig, ...] = ()
    channels: ChannelsConfig = Field(default_factory=ChannelsConfig)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)

    @model_validator(mode="after")
    def _cross_check(self) -> Self:
        # Raises ConfigError, which pydantic lets through unchanged: these checks
        # know the exact YAML path, which a pydantic error at the model would lose.
        # Every check runs, so one run reports every mistake (ConfigErrors).
        errors: list[ConfigError] = []
        for check in (
            partial(check_agents, self.agents),
            partial(check_approvers, self.approvers),
            partial(check_policy, self.policy, self.approvers, self.agents),
            partial(check_reachable, self.policy, self.approvers, self.enabled_channels),
        ):
            try:
                check()
            except ConfigError as exc:
                errors.append(exc)
        errors += [ConfigError(path, message) for path, message in problems(self.policy_spec())]
        public = None if self.server.public_url is None else str(self.server.public_url)
        for name in self.enabled_channels:
            section = self.channels.section(name)
            if section is None:
                continue
            try:
                registry.installed()[name].validate(section, public_url=public)
            except ConfigError as exc:
                errors.append(exc)
        ConfigErrors.raise_any(errors)
        return self

    @property
    def store_url(self) -> str:
        """The database URL for the store."""
        return self.store.url

    @property
    def enabled_channels(self) -> tuple[str, ...]:
        """Notification channels in delivery order (the registry's: by name).

        A channel whose ``on_without_others`` is set (the console) is on by
        default only when no other channel is configured, so a first run
        shows requests somewhere, while a production setup does not print
        them unless the operator asks for it.
        """
        sections = self.channels.sections
        installed = registry.installed()
        others = [name for name in sections if not installed[name].on_without_others]
        out: list[str] = []
        for name, channel in installed.items():
            section = sections.get(name)
            on = channel.enabled(section) if section is not None else channel.on_without_others
            if on and (section is not None or not others):
                out.append(name)
        return tuple(out)

    def policy_spec(self) -> PolicySpec:
        """The policy as the core's plain records, each rule tagged with its YAML path."""
        return policy_spec(self.policy, self.agents, remind_after=self.server.remind_after)

    def directory(self) -> Directory:
        """The approvers and the enabled channels, as the core looks them up."""
        approvers = []
        for approver in self.approvers:
            addresses = approver.addresses()
            teams = {ch: team for ch in addresses if (team := approver.team(ch)) is not None}
            approvers.append(
                Approver(
                    name=approver.name,
                    addresses=tuple(addresses.items()),
                    groups=approver.groups,
                    teams=tuple(teams.items()),
                )
            )
        return Directory(approvers, self.enabled_channels)

    def agent_for_token(self, token: str) -> str | None:
        """The agent whose bearer token is ``token``, or ``None``.

        Every configured token is compared, in constant time and without an
        early exit, so response timing says nothing about which prefix or which
        agent came close.
        """
        candidate = token.encode()
        found: str | None = None
        for agent in self.agents:
            matches = hmac.compare_digest(candidate, agent.token.get_secret_value().encode())
            if matches and found is None:
                found = agent.name
        return found
