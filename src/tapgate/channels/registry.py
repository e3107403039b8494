"""Finding the installed channels: the ``tapgate.channels`` entry-point group.

The built-in channels (console, LINE, Slack) register exactly as a
third-party package would, in ``pyproject.toml``::

    [project.entry-points."tapgate.channels"]
    slack = "tapgate.channels.slack:channel"

so the contract is exercised by the project itself, and nothing outside a
channel's folder imports it: the config and the server ask here by name.
An entry point names a :class:`~tapgate.channels.contract.Channel` instance
whose import is light (its SDK loads when the notifier or receiver is built).
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import entry_points

from tapgate.channels.contract import Channel
from tapgate.errors import ConfigError

__all__ = ["GROUP", "get", "installed", "names"]

GROUP = "tapgate.channels"


@cache
def installed() -> dict[str, Channel]:
    """Every installed channel by name, in name order (loaded once per process).

    A plugin that fails to load, or loads as something that is not a channel,
    is a :class:`~tapgate.errors.ConfigError` naming the entry point: a
    channel the operator installed must not silently vanish.
    """
    found: dict[str, Channel] = {}
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        if point.name in found:
            continue  # the same distribution seen twice on sys.path
        try:
            channel = point.load()
        except Exception as exc:  # a broken plugin: say which, not a traceback
            raise ConfigError(
                f"channels.{point.name}", f"the installed channel failed to load: {exc}"
            ) from exc
        if not isinstance(channel, Channel) or channel.name != point.name:
            raise ConfigError(
                f"channels.{point.name}",
                f"entry point {point.value!r} is not a tapgate channel named {point.name!r}",
            )
        found[point.name] = channel
    return found


def names() -> tuple[str, ...]:
    """The installed channels' names, sorted."""
    return tuple(installed())


def get(name: str) -> Channel | None:
    """The installed channel called ``name``, or ``None``."""
    return installed().get(name)
