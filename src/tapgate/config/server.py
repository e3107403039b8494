"""The ``server`` and ``store`` sections: where tapgate listens and where it keeps state."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator

from tapgate.config.fields import (
    Duration,
    HttpUrl,
    NonEmptyStr,
    Port,
    Section,
    StoreUrl,
    display_url,
)

__all__ = ["AccessLog", "ServerConfig", "StoreConfig"]

_CLIENT_SLICE = 60.0  # tapgate.client.LONG_POLL (not imported: bot config loads without it)


def _room_for_client_polls(value: float) -> float:
    """``max_wait`` must admit the clients' long-poll slices, or every poll is a 400."""
    if value < _CLIENT_SLICE:
        raise ValueError(
            f"must be at least {_CLIENT_SLICE:g}s: tapgate's clients (the Python library, "
            "the Claude Code hook, tapgate run) long-poll in slices of that length"
        )
    return value


def _yaml_switch(value: object) -> object:
    """YAML 1.1 reads a bare ``off`` as false (and ``on`` as true): take them as written."""
    if value is False:
        return "off"
    if value is True:
        return "all"
    return value


AccessLog = Annotated[Literal["off", "errors", "all"], BeforeValidator(_yaml_switch)]
"""``server.access_log``: which requests get an access line (``bot/access_log.py``)."""


class ServerConfig(Section):
    """Where tapgate listens; ``public_url`` is how LINE / Slack reach its webhooks."""

    host: NonEmptyStr = "127.0.0.1"
    port: Port = 8080
    public_url: HttpUrl | None = None
    max_wait: Annotated[Duration, AfterValidator(_room_for_client_polls)] = 300.0
    heartbeat_interval: Duration = 5.0
    remind_after: Duration | None = None
    delivery_lease: Duration = 60.0
    stream_write_timeout: Duration = 30.0
    reconcile_interval: Duration = 1.0
    body_timeout: Duration = 10.0
    # Refusals and failures only: at agents' call rates a line per allowed call
    # was ~14% of the server's CPU and repeats what the metrics and the audit
    # log already keep (docs/configuration.md).
    access_log: AccessLog = "errors"


class StoreConfig(Section):
    """The database: a SQLite file by default, PostgreSQL for several replicas."""

    url: StoreUrl = "sqlite:///tapgate.db"

    def __repr_args__(self) -> Any:
        # A PostgreSQL URL may carry a password; repr shows the rest of it only.
        yield "url", display_url(self.url)
