"""The ``approvers`` section: the people who may approve, with their per-platform ids.

The checks across entries live here beside the model: names unique ignoring
case, no approver named like a group, and one person per platform id, since a
tap must name exactly one approver. :class:`~tapgate.config.model.Config`
runs them.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, Self

from pydantic import ConfigDict, PrivateAttr, TypeAdapter, ValidationError, model_validator

from tapgate.channels import registry
from tapgate.config.errors import format_path
from tapgate.config.fields import NonEmptyStr, Section
from tapgate.errors import ConfigError

__all__ = ["ApproverConfig", "check_approvers"]

_BASE_KEYS = ("name", "groups")


class ApproverConfig(Section):
    """A person who may approve: a name, groups, and an id per channel.

    Every other key is a channel's: ``approvers[].<channel>`` is the
    approver's id there (validated by that channel, see
    :class:`~tapgate.channels.contract.AddressField`), plus any per-approver
    key a channel declares (Slack's ``slack_team``). The keys are checked by
    :func:`check_approvers`, which knows each entry's YAML path.
    """

    model_config = ConfigDict(extra="allow", frozen=True, hide_input_in_errors=True)

    name: NonEmptyStr
    groups: tuple[NonEmptyStr, ...] = ()

    _values: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _channel_keys(self) -> Self:
        # Ids as text: YAML reads a numeric id (Telegram's) as an int.
        self._values = {
            key: str(value)
            for key, value in (self.model_extra or {}).items()
            if isinstance(value, str | int) and not isinstance(value, bool)
        }
        return self

    def value(self, key: str) -> str | None:
        """A channel key's value as written (``slack``, ``slack_team``), or ``None``."""
        return self._values.get(key)

    def addresses(self) -> dict[str, str]:
        """Channel name → this approver's id there, for every installed channel they have."""
        installed = registry.installed()
        return {
            name: value
            for name, value in self._values.items()
            if (channel := installed.get(name)) is not None and channel.address is not None
        }

    def team(self, channel: str) -> str | None:
        """The workspace ``channel``'s id belongs to, where that channel scopes ids."""
        found = registry.get(channel)
        field = found.address.team_field if found is not None and found.address else None
        return self.value(field) if field else None


def _known_keys() -> dict[str, Any]:
    """Every key an approver may have beyond name and groups, to its pydantic type."""
    keys: dict[str, Any] = {}
    for name, channel in registry.installed().items():
        if channel.address is not None:
            keys[name] = NonEmptyStr
        keys.update(channel.approver_fields)
    return keys


def _check_channel_keys(index: int, approver: ApproverConfig) -> None:
    known = _known_keys()
    for key, raw in (approver.model_extra or {}).items():
        path = format_path(("approvers", index, key))
        if key not in known:
            allowed = [*_BASE_KEYS, *known]
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = (
                f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(allowed)}"
            )
            raise ConfigError(path, f"unknown key {key!r} ({hint})")
        if raw is None:
            continue
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise ConfigError(path, "expected a string")
        try:
            TypeAdapter(known[key]).validate_python(str(raw))
        except ValidationError:
            raise ConfigError(path, "must not be empty") from None
        channel = registry.get(key)
        if channel is not None and channel.address is not None:
            try:
                channel.address.parse(str(raw))
            except ValueError as exc:
                raise ConfigError(path, str(exc)) from None


def check_approvers(approvers: Sequence[ApproverConfig]) -> None:
    groups = {group for approver in approvers for group in approver.groups}
    # Keyed case-insensitively: "Alice" and "alice" as two approvers is a typo
    # waiting to become an audit log nobody can read (decisions match exactly).
    seen: dict[str, int] = {}
    for index, approver in enumerate(approvers):
        _check_channel_keys(index, approver)
        path = format_path(("approvers", index, "name"))
        key = approver.name.casefold()
        if key in seen:
            raise ConfigError(
                path,
                f"duplicate approver name {approver.name!r} "
                f"(also approvers[{seen[key]}], names are compared ignoring case)",
            )
        if approver.name in groups:
            raise ConfigError(path, f"{approver.name!r} is also a group name")
        seen[key] = index
    _check_platform_ids(approvers)


def _check_platform_ids(approvers: Sequence[ApproverConfig]) -> None:
    """One person per platform id: a tap must name exactly one approver.

    Where a channel's ids are unique only within a workspace (Slack), one may
    repeat for approvers in different workspaces (``slack_team``).
    """
    owners: dict[tuple[str, str], list[tuple[int, str | None]]] = {}
    for index, approver in enumerate(approvers):
        for channel, uid in approver.addresses().items():
            team = approver.team(channel)
            for other, other_team in owners.get((channel, uid), []):
                if team is None or other_team is None or team == other_team:
                    raise ConfigError(
                        format_path(("approvers", index, channel)),
                        f"the same {channel} user id as approvers[{other}]: a tap could not "
                        "tell them apart" + _team_hint(channel),
                    )
            owners.setdefault((channel, uid), []).append((index, team))


def _team_hint(channel: str) -> str:
    found = registry.get(channel)
    field = found.address.team_field if found is not None and found.address else None
    return f" (set a different {field} on each)" if field else ""
