"""The ``server`` and ``store`` sections: where tapgate listens and where it keeps state."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator

from tapgate.bot.config.fields import (
    Duration,
    HttpUrl,
    NonEmptyStr,
    Port,
    Section,
    StoreUrl,
    display_url,
)

__all__ = ["ServerConfig", "StoreConfig"]

_CLIENT_SLICE = 60.0  # tapgate.client.LONG_POLL (not imported: bot config loads without it)


def _room_for_client_polls(value: float) -> float:
    """``max_wait`` must admit the clients' long-poll slices, or every poll is a 400."""
    if value < _CLIENT_SLICE:
        raise ValueError(
            f"must be at least {_CLIENT_SLICE:g}s: tapgate's clients (the Python library, "
            "the Claude Code hook, tapgate run) long-poll in slices of that length"
        )
    return value


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


class StoreConfig(Section):
    """The database: a SQLite file by default, PostgreSQL for several replicas."""

    url: StoreUrl = "sqlite:///tapgate.db"

    def __repr_args__(self) -> Any:
        # A PostgreSQL URL may carry a password; repr shows the rest of it only.
        yield "url", display_url(self.url)
