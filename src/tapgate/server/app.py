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

from tapgate.channels import DeliveryHost, registry
from tapgate.config import Config
from tapgate.decisions.remember import offer_for
from tapgate.decisions.review_links import ReviewLinks
from tapgate.decisions.sign_in import SignIns
from tapgate.decisions.webhook_inbox import Inbox
from tapgate.delivery import Dispatcher, Notifier
from tapgate.delivery.notifier import Announcer
from tapgate.gate.clock import Clock, SystemClock
from tapgate.gate.gate import Gate
from tapgate.policy.engine import Policy
from tapgate.server.api import setup_api, setup_humanlayer
from tapgate.server.api.agent import PREFIX as AGENT_API
from tapgate.server.api.humanlayer import PREFIX as HUMANLAYER_API
from tapgate.server.bodies import HANDLER_ARGS, body_middleware
from tapgate.server.health import setup_health
from tapgate.server.heartbeat import Heartbeat
from tapgate.server.keys import CLOCK, CONFIG, DISPATCHER, GATE, INBOX, METRICS, SIGN_INS, STORE
from tapgate.server.metrics import Metrics
from tapgate.server.routes import setup_channels
from tapgate.server.test_hooks import apply_delay
from tapgate.server.unreachable import Unreachable
from tapgate.server.web_inbox import setup_web
from tapgate.store import Store

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
    setup_channels(app)
    setup_web(app)
    return app


def _webhook_refusals(metrics: Metrics) -> Callable[[str], None]:
    """Count a refused webhook body as the webhooks count an unreadable one (``payload``)."""

    def count(path: str) -> None:
        platform = path.removeprefix("/webhooks/")
        if platform in registry.installed():
            metrics.webhook_rejected(platform, "payload")

    return count


def notifiers_for(
    config: Config,
    *,
    config_path: str | None = None,
    gate: Gate | None = None,
    store: Store | None = None,
) -> list[Notifier]:
    """The notifiers the config's enabled channels call for, in delivery order.

    ``gate``: the store review links are kept in; ``store``: where conversation
    references are read (neither without a store: a dry run).
    """
    public = config.server.public_url
    host = DeliveryHost(
        tool_shell_args={t.name: t.shell for t in config.policy_spec().tools if t.shell},
        offers=partial(offer_for, Policy(config.policy_spec())),  # the remember buttons, per card
        inbox_button=public is not None,  # "Open inbox": a link needs a public URL
        config_path=config_path,
        public_url=None if public is None else str(public),
        review_links=None if gate is None else partial(_review_links, gate),
        conversations=None if store is None else store.conversations,
    )
    out: list[Notifier] = []
    for name in config.enabled_channels:
        channel = registry.installed()[name]
        section = config.channels.section(name) or channel.settings_model()
        out.append(channel.notifier(section, host))
    return out


def _review_links(gate: Gate, channel: str) -> ReviewLinks:
    return ReviewLinks(gate, channel=channel)


def _paces(config: Config) -> dict[str, float]:
    """Seconds between two messages to one conversation, per channel that paces."""
    out: dict[str, float] = {}
    for name, section in config.channels.sections.items():
        pace = registry.installed()[name].pace(section)
        if pace is not None:
            out[name] = pace
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
        channels = list(
            notifiers
            if notifiers is not None
            else notifiers_for(config, config_path=config_path, gate=gate, store=store)
        )
        console = next((n for n in channels if isinstance(n, Announcer)), None)
        unreachable = Unreachable(gate, app[METRICS], console)
        dispatcher = Dispatcher(
            store,
            channels,
            clock=clock,
            bus=gate.bus,
            pace=_paces(config),
            lease=config.server.delivery_lease,
            on_failure=app[METRICS].delivery_failed,
            on_unreachable=unreachable,
        )
        inbox = Inbox(gate, apply_delay=delay)  # the receivers register with it (server/routes.py)
        sign_ins = SignIns(gate)  # the web inbox's links and sessions (server/web_inbox)
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
