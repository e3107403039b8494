"""tapgate.config: the YAML config, from a file on disk to the core's records.

One module per step and per section, so each is found in one guess:

- :mod:`~tapgate.config.loading`: ``load_config`` / ``parse_config`` (YAML, duplicate keys),
  ``load_store_config`` (the store and approver names only, for the operator's commands)
- :mod:`~tapgate.config.substitution`: ``${VAR}`` / ``${VAR:-default}`` substitution
- :mod:`~tapgate.config.model`: ``Config``, its cross-section checks, ``policy_spec()``
- :mod:`~tapgate.config.reachable`: every approver the policy asks is reachable on a channel
- :mod:`~tapgate.config.quorum`: a quorum a rule can reach, escalation to somebody
- :mod:`~tapgate.config.server`, :mod:`~tapgate.config.agents`,
  :mod:`~tapgate.config.approvers`, :mod:`~tapgate.config.channels` (each channel's section,
  validated by the channel's own model),
  :mod:`~tapgate.config.policy`: one section each
- :mod:`~tapgate.config.fields`: field types (durations, secrets, URLs) and ``Section``
- :mod:`~tapgate.config.errors`: YAML paths and pydantic errors as one ``ConfigError``

Nothing here imports aiohttp or the server: the config is
read by the server, the CLI and tests alike (``tests/test_conventions.py``).
"""

from tapgate.config.agents import AgentConfig
from tapgate.config.approvers import ApproverConfig
from tapgate.config.channels import ChannelsConfig
from tapgate.config.errors import format_path
from tapgate.config.fields import display_url, parse_duration
from tapgate.config.loading import load_config, load_store_config, parse_config
from tapgate.config.model import Config
from tapgate.config.policy import (
    AgentPolicyConfig,
    PolicyConfig,
    RuleConfig,
    SandboxConfig,
    ToolConfig,
)
from tapgate.config.server import ServerConfig, StoreConfig

__all__ = [
    "AgentConfig",
    "AgentPolicyConfig",
    "ApproverConfig",
    "ChannelsConfig",
    "Config",
    "PolicyConfig",
    "RuleConfig",
    "SandboxConfig",
    "ServerConfig",
    "StoreConfig",
    "ToolConfig",
    "display_url",
    "format_path",
    "load_config",
    "load_store_config",
    "parse_config",
    "parse_duration",
]
