"""The ``channels`` section: one key per enabled channel, validated by that channel's model.

The channels are plugins (decision record ``0018-channels-are-plugins``): the
key ``channels.<name>`` selects the installed channel called ``name`` from the
``tapgate.channels`` entry-point group, whose ``settings_model`` validates the
section. An unknown name is a :class:`~tapgate.errors.ConfigError` that lists
the installed channels. A section that is absent (or null) is not configured.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Literal, Self

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from tapgate.channels import registry
from tapgate.config.errors import config_error
from tapgate.config.fields import Section
from tapgate.errors import ConfigError

__all__ = ["ChannelsConfig"]


class ChannelsConfig(Section):
    """The notification channels: ``tap_log``, then one section per channel.

    ``tap_log`` is the level of the one line a decided tap logs (every
    channel alike); ``off`` logs none (the decision is in the audit log anyway).
    """

    model_config = ConfigDict(extra="allow", frozen=True, hide_input_in_errors=True)

    tap_log: Annotated[
        Literal["off", "debug", "info", "warning"],
        # YAML 1.1 reads a bare ``off`` as false: that is what the operator wrote.
        BeforeValidator(lambda value: "off" if value is False else value),
    ] = "info"

    _sections: dict[str, BaseModel] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _channel_sections(self) -> Self:
        installed = registry.installed()
        sections: dict[str, BaseModel] = {}
        for name, raw in (self.model_extra or {}).items():
            channel = installed.get(name)
            if channel is None:
                raise ConfigError(f"channels.{name}", _unknown(name, tuple(installed)))
            if raw is None:
                continue  # `slack:` with everything commented out: not configured
            try:
                sections[name] = channel.settings_model.model_validate(raw)
            except ValidationError as exc:
                raise config_error(exc, channel.settings_model, ("channels", name)) from None
        self._sections = {name: sections[name] for name in installed if name in sections}
        # Keep the validated sections, not the raw mappings: a repr (or a dump)
        # of the config must show secrets as SecretStr does, masked.
        extra = self.__pydantic_extra__
        if extra is not None:
            extra.update(sections)
        return self

    def section(self, name: str) -> BaseModel | None:
        """The validated ``channels.<name>``, or ``None`` when it is not configured."""
        return self._sections.get(name)

    @property
    def sections(self) -> dict[str, BaseModel]:
        """Every configured channel's section, by name, in the registry's order."""
        return dict(self._sections)


def _unknown(name: str, installed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, installed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown channel {name!r}{hint}; installed channels: {', '.join(installed)}"
