"""Wiring the LINE and Slack webhooks into the app (or Slack Socket Mode).

The webhook objects are created once the gate exists (in ``cleanup_ctx``) and
closed on shutdown; the routes are three-line adapters that find them in the
app state. Both register with the app's inbox; once they have, the events
stored before a crash (acknowledged, never applied) are replayed, before the
server takes new ones (DESIGN.md decision 17).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from aiohttp import web

from tapgate.bot.keys import CONFIG, GATE, INBOX, METRICS, SIGN_INS
from tapgate.bot.web import sign_in_url
from tapgate.core.chat_commands import LinkMaker

if TYPE_CHECKING:  # imported where used: a LINE-only server never loads slack-bolt
    from tapgate.webhooks.line import LineWebhook
    from tapgate.webhooks.slack import SlackWebhook

__all__ = ["LINE_WEBHOOK", "SLACK_WEBHOOK", "setup_webhooks"]

LINE_WEBHOOK: web.AppKey[LineWebhook] = web.AppKey("tapgate.line_webhook")
SLACK_WEBHOOK: web.AppKey[SlackWebhook] = web.AppKey("tapgate.slack_webhook")


async def line_route(request: web.Request) -> web.StreamResponse:
    """``POST /webhooks/line``."""
    return await request.app[LINE_WEBHOOK](request)


async def slack_route(request: web.Request) -> web.StreamResponse:
    """``POST /webhooks/slack``."""
    return await request.app[SLACK_WEBHOOK](request)


def setup_webhooks(app: web.Application) -> None:
    """Register the webhooks the config's channels call for."""
    config = app[CONFIG]
    if config.channels.line is not None:
        app.cleanup_ctx.append(_line)
        app.router.add_post("/webhooks/line", line_route)
    if config.channels.slack is not None:
        app.cleanup_ctx.append(_slack)
        if config.channels.slack.app_token is None:
            app.router.add_post("/webhooks/slack", slack_route)
    if config.channels.line is not None or config.channels.slack is not None:
        app.cleanup_ctx.append(_replay)


async def _replay(app: web.Application) -> AsyncIterator[None]:
    """Apply what was stored before this process started and never applied.

    Everything received before now, whatever its age: this process has not
    received anything yet. A row another live replica is applying at this
    moment is applied once all the same (its event id decides).
    """
    inbox = app[INBOX]
    replayed = await inbox.replay(received_before=app[GATE].clock.now())
    if replayed:
        logging.getLogger(__name__).warning("replaying %d stored webhook event(s)", replayed)
    yield


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


async def _line(app: web.Application) -> AsyncIterator[None]:
    from tapgate.webhooks._tap_log import TAP_LOG_LEVELS
    from tapgate.webhooks.line import LineWebhook

    line = app[CONFIG].channels.line
    assert line is not None
    metrics = app[METRICS]
    webhook = LineWebhook(
        gate=app[GATE],
        channel_secret=line.channel_secret.get_secret_value(),
        access_token=line.channel_access_token.get_secret_value(),
        api_base_url=line.api_base_url,
        timeout=line.timeout,
        on_reject=lambda reason: metrics.webhook_rejections.labels("line", reason).inc(),
        on_decision=metrics.tap_latency.observe,
        inbox=app[INBOX],
        links=_links(app),
        reason_window=line.reason_window,
        tap_log=TAP_LOG_LEVELS[app[CONFIG].channels.tap_log],
    )
    app[LINE_WEBHOOK] = webhook
    try:
        yield
    finally:
        await webhook.close()


async def _slack(app: web.Application) -> AsyncIterator[None]:
    from tapgate.webhooks._tap_log import TAP_LOG_LEVELS
    from tapgate.webhooks.slack import SlackWebhook

    slack = app[CONFIG].channels.slack
    assert slack is not None
    metrics = app[METRICS]
    webhook = SlackWebhook(
        gate=app[GATE],
        signing_secret=slack.signing_secret.get_secret_value(),
        bot_token=slack.bot_token.get_secret_value(),
        api_base_url=slack.api_base_url,
        team_id=slack.team_id,
        timeout=slack.timeout,
        on_reject=lambda reason: metrics.webhook_rejections.labels("slack", reason).inc(),
        on_decision=metrics.tap_latency.observe,
        inbox=app[INBOX],
        tap_log=TAP_LOG_LEVELS[app[CONFIG].channels.tap_log],
        links=_links(app),
    )
    app[SLACK_WEBHOOK] = webhook
    if slack.app_token is not None:
        await webhook.start_socket_mode(slack.app_token.get_secret_value())
    try:
        yield
    finally:
        await webhook.close()
