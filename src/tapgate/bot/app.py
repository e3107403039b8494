"""Assembling the tapgate server: one aiohttp app that owns every component.

``build_app(config)`` returns an application whose ``cleanup_ctx`` opens the
store (migrating it), starts the gate, the outbox dispatcher, the heartbeat
and the webhooks, and closes them in reverse order on shutdown, so SIGTERM
stops accepting, lets the work in flight finish, and closes the SDK clients.
Tests build the very same app with a manual clock or recording notifiers.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial

from aiohttp import web

from tapgate.bot.api import setup_api, setup_humanlayer
from tapgate.bot.api.agent import PREFIX as AGENT_API
from tapgate.bot.api.humanlayer import PREFIX as HUMANLAYER_API
from tapgate.bot.bodies import HANDLER_ARGS, body_middleware
from tapgate.bot.config import Config
from tapgate.bot.health import setup_health
from tapgate.bot.heartbeat import Heartbeat
from tapgate.bot.keys import CLOCK, CONFIG, DISPATCHER, GATE, INBOX, METRICS, SIGN_INS, STORE
from tapgate.bot.metrics import Metrics
from tapgate.bot.routes import setup_webhooks
from tapgate.bot.test_hooks import apply_delay
from tapgate.bot.unreachable import Unreachable
from tapgate.bot.web import setup_web
from tapgate.core.always import offer_for
from tapgate.core.clock import Clock, SystemClock
from tapgate.core.gate import Gate
from tapgate.core.inbox import Inbox
from tapgate.core.policy import Policy
from tapgate.core.sign_in import SignIns
from tapgate.core.store import Store
from tapgate.notifiers import ConsoleNotifier, Dispatcher, Notifier

__all__ = ["HEARTBEAT", "build_app", "notifiers_for"]

HEARTBEAT = web.AppKey("tapgate.heartbeat", Heartbeat)
_MAX_BODY = 1024 * 1024  # LINE and Slack payloads are a few KB; agents' arguments stay below 1 MB


def build_app(
    config: Config,
    *,
    clock: Clock | None = None,
    notifiers: Sequence[Notifier] | None = None,
    config_path: str | None = None,
) -> web.Application:
    """The server for ``config``; ``notifiers`` replaces the configured ones (tests).

    ``config_path`` is the file ``tapgate serve`` loaded: the console's
    copy-paste commands name it, so they act on this server's database.

    Raises :class:`~tapgate.errors.ConfigError` for a test hook set where it is
    refused (``bot/test_hooks.py``).
    """
    delay = apply_delay(config, os.environ)
    app = web.Application(client_max_size=_MAX_BODY, handler_args=HANDLER_ARGS)
    app[CONFIG] = config
    app[CLOCK] = clock or SystemClock()
    app[METRICS] = Metrics()
    app.cleanup_ctx.append(_core(notifiers, config_path, delay))
    setup_health(app)
    setup_api(app)
    setup_humanlayer(app)
    # After the APIs' auth middlewares: an agent's body is read once its token is known.
    app.middlewares.append(
        body_middleware(
            timeout=config.server.body_timeout,
            max_size=_MAX_BODY,
            json_api_prefixes=(AGENT_API, HUMANLAYER_API),
            on_refuse=_webhook_refusals(app[METRICS]),
        )
    )
    setup_webhooks(app)
    setup_web(app)
    return app


def _webhook_refusals(metrics: Metrics) -> Callable[[str], None]:
    """Count a refused webhook body as the webhooks count an unreadable one (``payload``)."""

    def count(path: str) -> None:
        platform = path.removeprefix("/webhooks/")
        if platform in ("line", "slack"):
            metrics.webhook_rejections.labels(platform, "payload").inc()

    return count


def notifiers_for(config: Config, *, config_path: str | None = None) -> list[Notifier]:
    """The notifiers the config's enabled channels call for."""
    channels = config.channels
    shell_args = {t.name: t.shell for t in config.policy_spec().tools if t.shell}
    offers = partial(offer_for, Policy(config.policy_spec()))  # the remember buttons, per card
    inbox = config.server.public_url is not None  # "Open inbox": a link needs a public URL
    out: list[Notifier] = []
    if "console" in config.enabled_channels:
        out.append(
            ConsoleNotifier(tool_shell_args=shell_args, config_path=config_path, offers=offers)
        )
    if channels.line is not None:
        from tapgate.notifiers.line import LineNotifier  # the SDK loads only when used

        out.append(
            LineNotifier(
                channels.line.channel_access_token.get_secret_value(),
                api_base_url=channels.line.api_base_url,
                timeout=channels.line.timeout,
                tool_shell_args=shell_args,
                offers=offers,
                inbox_button=inbox,
            )
        )
    if channels.slack is not None:
        from tapgate.notifiers.slack import SlackNotifier

        out.append(
            SlackNotifier(
                channels.slack.bot_token.get_secret_value(),
                api_base_url=channels.slack.api_base_url,
                timeout=channels.slack.timeout,
                channel_id=channels.slack.channel,
                tool_shell_args=shell_args,
                offers=offers,
                inbox_button=inbox,
            )
        )
    return out


def _core(
    notifiers: Sequence[Notifier] | None, config_path: str | None, delay: float
) -> Callable[[web.Application], AsyncIterator[None]]:
    async def context(app: web.Application) -> AsyncIterator[None]:
        config, clock = app[CONFIG], app[CLOCK]
        store = await Store.open(config.store_url)
        # Decisions made by another process (the operator's CLI) reach waiters
        # through the reconciliation sweep: one query per interval for all of them.
        gate = Gate(
            store=store,
            policy=Policy(config.policy_spec()),
            directory=config.directory(),
            clock=clock,
            reconcile_interval=config.server.reconcile_interval,
            limits={agent.name: agent.limits() for agent in config.agents},
        )
        app[METRICS].watch(gate.bus)
        app[METRICS].waiters.set_function(lambda: gate.waiting)
        pace = {"slack": config.channels.slack.pace} if config.channels.slack else {}
        channels = list(
            notifiers if notifiers is not None else notifiers_for(config, config_path=config_path)
        )
        console = next((n for n in channels if isinstance(n, ConsoleNotifier)), None)
        unreachable = Unreachable(gate, app[METRICS], console)
        dispatcher = Dispatcher(
            store,
            channels,
            clock=clock,
            bus=gate.bus,
            pace=pace,
            lease=config.server.delivery_lease,
            on_failure=app[METRICS].delivery_failed,
            on_unreachable=unreachable,
        )
        inbox = Inbox(gate, apply_delay=delay)  # the webhooks register with it (bot/routes.py)
        sign_ins = SignIns(gate)  # the web inbox's links and sessions (bot/web)
        heartbeat = Heartbeat(
            gate,
            dispatcher,
            inbox=inbox,
            sign_ins=sign_ins,
            interval=config.server.heartbeat_interval,
        )
        app[STORE], app[GATE], app[DISPATCHER], app[HEARTBEAT] = store, gate, dispatcher, heartbeat
        app[INBOX], app[SIGN_INS] = inbox, sign_ins
        await gate.start()
        await dispatcher.start()
        await heartbeat.start()
        try:
            yield
        finally:
            await heartbeat.close()
            await dispatcher.close()
            await unreachable.close()
            await gate.close()
            await store.close()

    return context
