"""The ``approvers`` section: the people who may approve, with their per-platform ids.

The checks across entries live here beside the model: names unique ignoring
case, no approver named like a group, and one person per platform id, since a
tap must name exactly one approver. :class:`~tapgate.bot.config.model.Config`
runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from tapgate.bot.config.errors import format_path
from tapgate.bot.config.fields import NonEmptyStr, Section
from tapgate.errors import ConfigError

__all__ = ["ApproverConfig", "check_approvers"]


class ApproverConfig(Section):
    """A person who may approve, with a user id per platform and optional groups."""

    name: NonEmptyStr
    line: NonEmptyStr | None = None
    slack: NonEmptyStr | None = None
    slack_team: NonEmptyStr | None = None
    groups: tuple[NonEmptyStr, ...] = ()


def check_approvers(approvers: Sequence[ApproverConfig]) -> None:
    groups = {group for approver in approvers for group in approver.groups}
    # Keyed case-insensitively: "Alice" and "alice" as two approvers is a typo
    # waiting to become an audit log nobody can read (decisions match exactly).
    seen: dict[str, int] = {}
    for index, approver in enumerate(approvers):
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

    Slack ids are unique only within a workspace, so one may repeat for
    approvers in different ``slack_team``s; LINE ids never repeat.
    """
    owners: dict[tuple[str, str], list[tuple[int, str | None]]] = {}
    for index, approver in enumerate(approvers):
        for channel, uid, team in (
            ("line", approver.line, None),
            ("slack", approver.slack, approver.slack_team),
        ):
            if uid is None:
                continue
            for other, other_team in owners.get((channel, uid), []):
                if team is None or other_team is None or team == other_team:
                    raise ConfigError(
                        format_path(("approvers", index, channel)),
                        f"the same {channel} user id as approvers[{other}]: a tap could not "
                        "tell them apart"
                        + (" (set a different slack_team on each)" if channel == "slack" else ""),
                    )
            owners.setdefault((channel, uid), []).append((index, team))
