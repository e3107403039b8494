"""Wiring the enabled channels' inbound sides into the app: routes, receivers, replay.

Routes are added when the app is built (aiohttp's router freezes at start);
each is a three-line adapter that finds its channel's
:class:`~tapgate.channels.contract.Receiver` in the app state, because a
receiver needs the gate, which exists only once ``cleanup_ctx`` has opened the
store. Every receiver registers with the app's webhook inbox as it starts;
once all have, the events stored before a crash (acknowledged, never applied)
are replayed, before the server takes new ones (decision record
``0017-record-before-acknowledge``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from functools import partial

from aiohttp import web

from tapgate.channels import ChannelHost, Receiver, registry
from tapgate.channels.tap_log import TAP_LOG_LEVELS
from tapgate.decisions.chat_commands import LinkMaker
from tapgate.server.keys import CONFIG, GATE, INBOX, METRICS, SIGN_INS, STORE
from tapgate.server.web_inbox import sign_in_url

__all__ = ["RECEIVERS", "setup_channels"]

RECEIVERS: web.AppKey[dict[str, Receiver]] = web.AppKey("tapgate.receivers", dict)
"""The started receivers, by channel name (a channel with no inbound side has none)."""

_log = logging.getLogger(__name__)


async def _route(channel: str, route: str, request: web.Request) -> web.StreamResponse:
    return await request.app[RECEIVERS][channel].handler(route)(request)


def setup_channels(app: web.Application) -> None:
    """Add the enabled channels' routes, and start and close their receivers with the app."""
    config = app[CONFIG]
    sections = config.channels.sections
    enabled = [name for name in config.enabled_channels if name in sections]
    for name in enabled:
        for route in registry.installed()[name].routes(sections[name]):
            app.router.add_route(route.method, route.path, partial(_route, name, route.name))
    app[RECEIVERS] = {}
    if enabled:
        app.cleanup_ctx.append(_receivers(enabled))


def _receivers(enabled: list[str]) -> Callable[[web.Application], AsyncIterator[None]]:
    async def context(app: web.Application) -> AsyncIterator[None]:
        config, metrics = app[CONFIG], app[METRICS]
        receivers = app[RECEIVERS]
        try:
            for name in enabled:
                host = ChannelHost(
                    gate=app[GATE],
                    inbox=app[INBOX],
                    links=_links(app),
                    on_reject=partial(metrics.webhook_rejected, name),
                    on_decision=metrics.tap_latency.observe,
                    tap_log=TAP_LOG_LEVELS[config.channels.tap_log],
                    public_url=_public_url(app),
                    conversations=app[STORE].conversations,
                )
                channel = registry.installed()[name]
                receiver = await channel.start(config.channels.sections[name], host)
                if receiver is not None:
                    receivers[name] = receiver
            await _replay(app)
            yield
        finally:
            for receiver in reversed(list(receivers.values())):
                await receiver.close()

    return context


async def _replay(app: web.Application) -> None:
    """Apply what was stored before this process started and never applied.

    Everything received before now, whatever its age: this process has not
    received anything yet. A row another live replica is applying at this
    moment is applied once all the same (its event id decides).
    """
    replayed = await app[INBOX].replay(received_before=app[GATE].clock.now())
    if replayed:
        _log.warning("replaying %d stored webhook event(s)", replayed)


def _links(app: web.Application) -> LinkMaker | None:
    """Sign-in links to the web inbox for the chats' ``inbox`` command, at ``server.public_url``.

    ``None`` without a public URL: a link to ``127.0.0.1`` would open nothing on a phone.
    """
    public = app[CONFIG].server.public_url
    if public is None:
        return None
    sign_ins = app[SIGN_INS]

    async def link(approver: str, via: str) -> str:
        return sign_in_url(str(public), await sign_ins.link(approver, via=via))

    return link


def _public_url(app: web.Application) -> str | None:
    public = app[CONFIG].server.public_url
    return None if public is None else str(public)
