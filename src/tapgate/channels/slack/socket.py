"""Slack Socket Mode: the same interactions over a WebSocket, for servers without a public URL.

Kept apart from the HTTP route (``slack.py``) because only the transport
differs: bolt dispatches both to the same listeners. What is ours here is
start-up and shutdown; reconnects are the SDK's job.
"""

from __future__ import annotations

import asyncio

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tapgate.errors import ConfigError

__all__ = ["close_socket", "open_socket_mode"]

_TOKEN_ERRORS = frozenset({"invalid_auth", "not_authed", "not_allowed_token_type", "token_revoked"})


async def open_socket_mode(
    bolt: AsyncApp, client: AsyncWebClient, app_token: str, timeout: float
) -> AsyncSocketModeHandler:
    """Connect ``bolt`` over Socket Mode with an ``xapp-`` token.

    The first WebSocket URL is fetched here, so a wrong token fails the start
    with a :class:`~tapgate.errors.ConfigError` instead of the SDK retrying
    forever; the connection attempt is bounded by ``timeout``.
    """
    handler = AsyncSocketModeHandler(bolt, app_token)  # opens a session: in the loop
    try:
        handler.client.wss_uri = await _socket_url(client, app_token)
        async with asyncio.timeout(timeout):
            await handler.connect_async()  # type: ignore[no-untyped-call]  # untyped in bolt
    except BaseException:
        await close_socket(handler)
        raise
    return handler


async def close_socket(handler: AsyncSocketModeHandler) -> None:
    """Close the Socket Mode client and wait for the tasks it cancelled, so none outlives it."""
    client = handler.client
    await handler.close_async()  # type: ignore[no-untyped-call]  # untyped in bolt
    tasks = [client.message_processor, client.current_session_monitor, client.message_receiver]
    await asyncio.gather(*(t for t in tasks if t is not None), return_exceptions=True)


async def _socket_url(client: AsyncWebClient, app_token: str) -> str:
    try:
        response = await client.apps_connections_open(app_token=app_token)
    except SlackApiError as error:
        code = str(error.response.get("error", ""))
        if code in _TOKEN_ERRORS:
            raise ConfigError(
                "channels.slack.app_token", f"Slack refused the app-level token: {code}"
            ) from None
        raise
    return str(response["url"])
