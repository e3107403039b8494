"""Who may approve, and where to reach them.

Identity comes from config (decision 0006-identity-from-config): an approver has a name, a user
id per platform, and groups. A rule names approvers or groups; the directory
expands them to people and to one delivery per person × enabled channel.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tapgate.gate.models import Delivery

__all__ = ["WEB", "Approver", "Directory"]

WEB = "web"
"""The web inbox's channel name in taps and audit lines."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Approver:
    """A person who may decide requests. ``addresses`` maps channel → user id.

    ``teams`` maps a channel to the workspace the user id belongs to (Slack
    user ids are only unique within a workspace): a tap from another
    workspace with the same user id is not this approver.
    """

    name: str
    addresses: tuple[tuple[str, str], ...] = ()
    groups: tuple[str, ...] = ()
    teams: tuple[tuple[str, str], ...] = ()

    def team(self, channel: str) -> str | None:
        """The workspace this approver's ``channel`` id belongs to, if configured."""
        for name, value in self.teams:
            if name == channel:
                return value
        return None

    def address(self, channel: str) -> str | None:
        """This approver's user id on ``channel``, if any."""
        for name, value in self.addresses:
            if name == channel:
                return value
        return None


class Directory:
    """The approvers from config, looked up by name, group or platform id."""

    def __init__(self, approvers: Iterable[Approver] = (), channels: Iterable[str] = ()) -> None:
        self._by_name = {a.name: a for a in approvers}
        self._channels = tuple(channels)
        # A Slack id may belong to several approvers in different workspaces.
        self._by_address: dict[tuple[str, str], list[str]] = {}
        for a in self._by_name.values():
            for channel, uid in a.addresses:
                self._by_address.setdefault((channel, uid), []).append(a.name)

    @property
    def names(self) -> tuple[str, ...]:
        """Every approver's name, in config order."""
        return tuple(self._by_name)

    @property
    def channels(self) -> tuple[str, ...]:
        """The enabled notification channels."""
        return self._channels

    def get(self, name: str) -> Approver | None:
        """The approver called ``name``."""
        return self._by_name.get(name)

    def expand(self, names_or_groups: Iterable[str]) -> tuple[str, ...]:
        """Approver names for a rule's ``approvers`` list; empty means everyone.

        A name that is neither an approver nor a group expands to nobody: the
        config loader rejects such names, so this only guards direct API use.
        """
        wanted = tuple(names_or_groups)
        if not wanted:
            return self.names
        out: list[str] = []
        for item in wanted:
            for approver in self._by_name.values():
                if (approver.name == item or item in approver.groups) and approver.name not in out:
                    out.append(approver.name)
        return tuple(out)

    def identify(self, channel: str, user_id: str, team: str | None = None) -> str | None:
        """The approver name behind a platform user id (the tapper), if any.

        When the approver's workspace is configured for ``channel``, the tap
        must come from that workspace. On ``web`` the user id *is* the
        approver's name: the web inbox hands over the name its verified
        session carries (:mod:`tapgate.decisions.sign_in`), never one from a form.
        """
        if channel == WEB:
            return user_id if user_id in self._by_name else None
        for name in self._by_address.get((channel, user_id), ()):
            expected = self._by_name[name].team(channel)
            if expected is None or team == expected:
                return name
        return None

    def deliveries(self, approvers: Iterable[str]) -> tuple[Delivery, ...]:
        """One delivery per approver × enabled channel on which they have an address.

        The console channel reaches everyone (it prints locally), so every
        approver gets a console delivery when it is enabled.
        """
        out: list[Delivery] = []
        for name in approvers:
            approver = self._by_name.get(name)
            if approver is None:
                continue
            for channel in self._channels:
                address = name if channel == "console" else approver.address(channel)
                if address:
                    out.append(Delivery(approver=name, channel=channel, address=address))
        return tuple(out)
