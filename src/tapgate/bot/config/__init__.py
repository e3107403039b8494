"""tapgate.bot.config: the YAML config, from a file on disk to the core's records.

One module per step and per section, so each is found in one guess:

- :mod:`~tapgate.bot.config.loading`: ``load_config`` / ``parse_config`` (YAML, duplicate keys),
  ``load_store_config`` (the store and approver names only, for the operator's commands)
- :mod:`~tapgate.bot.config.substitution`: ``${VAR}`` / ``${VAR:-default}`` substitution
- :mod:`~tapgate.bot.config.model`: ``Config``, its cross-section checks, ``policy_spec()``
- :mod:`~tapgate.bot.config.reach`: every approver the policy asks is reachable on a channel
- :mod:`~tapgate.bot.config.quorum`: a quorum a rule can reach, escalation to somebody
- :mod:`~tapgate.bot.config.server`, :mod:`~tapgate.bot.config.agents`,
  :mod:`~tapgate.bot.config.approvers`, :mod:`~tapgate.bot.config.channels`,
  :mod:`~tapgate.bot.config.policy`: one section each
- :mod:`~tapgate.bot.config.fields`: field types (durations, secrets, URLs) and ``Section``
- :mod:`~tapgate.bot.config.errors`: YAML paths and pydantic errors as one ``ConfigError``

Nothing here imports aiohttp or the rest of ``tapgate.bot``: the config is
read by the server, the CLI and tests alike (``tests/test_conventions.py``).
"""

from tapgate.bot.config.agents import AgentConfig
from tapgate.bot.config.approvers import ApproverConfig
from tapgate.bot.config.channels import ChannelsConfig, ConsoleConfig, LineConfig, SlackConfig
from tapgate.bot.config.errors import format_path
from tapgate.bot.config.fields import display_url, parse_duration
from tapgate.bot.config.loading import load_config, load_store_config, parse_config
from tapgate.bot.config.model import Config
from tapgate.bot.config.policy import (
    AgentPolicyConfig,
    PolicyConfig,
    RuleConfig,
    SandboxConfig,
    ToolConfig,
)
from tapgate.bot.config.server import ServerConfig, StoreConfig

__all__ = [
    "AgentConfig",
    "AgentPolicyConfig",
    "ApproverConfig",
    "ChannelsConfig",
    "Config",
    "ConsoleConfig",
    "LineConfig",
    "PolicyConfig",
    "RuleConfig",
    "SandboxConfig",
    "ServerConfig",
    "SlackConfig",
    "StoreConfig",
    "ToolConfig",
    "display_url",
    "format_path",
    "load_config",
    "load_store_config",
    "parse_config",
    "parse_duration",
]
