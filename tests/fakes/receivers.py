"""The running app's LINE and Slack receivers, typed, for tests that wait on their work."""

from __future__ import annotations

from typing import cast

from aiohttp import web

from tapgate.channels.line.webhook import LineWebhook
from tapgate.channels.slack.webhook import SlackWebhook
from tapgate.server.routes import RECEIVERS

__all__ = ["line_webhook", "slack_webhook"]


def line_webhook(app: web.Application) -> LineWebhook:
    """The LINE channel's receiver in ``app`` (started with the app)."""
    return cast(LineWebhook, app[RECEIVERS]["line"])


def slack_webhook(app: web.Application) -> SlackWebhook:
    """The Slack channel's receiver in ``app`` (started with the app)."""
    return cast(SlackWebhook, app[RECEIVERS]["slack"])
