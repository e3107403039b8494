"""The ``approvers`` section: the people who may approve, with their per-platform ids.

The checks across entries live here beside the model: names unique ignoring
case, no approver named like a group, and one person per platform id, since a
tap must name exactly one approver. :class:`~tapgate.bot.config.model.Config`
runs them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

from pydantic import AfterValidator
from pydantic_core import PydanticCustomError

from tapgate.bot.config.errors import format_path
from tapgate.bot.config.fields import NonEmptyStr, Section
from tapgate.errors import ConfigError

__all__ = ["ApproverConfig", "LineUserId", "SlackUserId", "check_approvers"]

_LINE_USER = re.compile(r"U[0-9a-f]{32}")
_SLACK_USER = re.compile(r"[UW][A-Z0-9]+")


def _line_user(value: str) -> str:
    # A wrong id is accepted by LINE's push API only to fail later, and never
    # matches a tap: the approver would silently be unreachable.
    if not _LINE_USER.fullmatch(value):
        raise PydanticCustomError(
            "line_id",
            "expected a LINE user id: U and 32 lower-case hex digits (send 'id' to the bot)",
        )
    return value


def _slack_user(value: str) -> str:
    if not _SLACK_USER.fullmatch(value):
        raise PydanticCustomError(
            "slack_id",
            "expected a Slack member id: U or W, then upper-case letters and digits "
            "(profile → ⋮ → Copy member ID)",
        )
    return value


LineUserId = Annotated[NonEmptyStr, AfterValidator(_line_user)]
"""A LINE user id as webhook events carry it: ``U`` + 32 lower-case hex digits."""
SlackUserId = Annotated[NonEmptyStr, AfterValidator(_slack_user)]
"""A Slack member id: ``U`` or ``W`` (Enterprise Grid), then upper-case letters and digits."""


class ApproverConfig(Section):
    """A person who may approve, with a user id per platform and optional groups."""

    name: NonEmptyStr
    line: LineUserId | None = None
    slack: SlackUserId | None = None
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
