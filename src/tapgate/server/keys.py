"""Typed application state of the tapgate server (``web.AppKey``), one key per component.

Every component is created and closed by the app's ``cleanup_ctx``; handlers
read them from ``request.app[KEY]``, so a test can build the real app with a
``ManualClock`` or recording notifiers and nothing global is involved.
"""

from __future__ import annotations

from aiohttp import web

from tapgate.config import Config
from tapgate.decisions.sign_in import SignIns
from tapgate.decisions.webhook_inbox import Inbox
from tapgate.delivery.dispatcher import Dispatcher
from tapgate.gate.clock import Clock
from tapgate.gate.gate import Gate
from tapgate.server.metrics import Metrics
from tapgate.store import Store

__all__ = ["CLOCK", "CONFIG", "DISPATCHER", "GATE", "INBOX", "METRICS", "SIGN_INS", "STORE"]

CONFIG = web.AppKey("tapgate.config", Config)
CLOCK = web.AppKey("tapgate.clock", Clock)
STORE = web.AppKey("tapgate.store", Store)
GATE = web.AppKey("tapgate.gate", Gate)
INBOX = web.AppKey("tapgate.inbox", Inbox)
DISPATCHER = web.AppKey("tapgate.dispatcher", Dispatcher)
METRICS = web.AppKey("tapgate.metrics", Metrics)
SIGN_INS = web.AppKey("tapgate.sign_ins", SignIns)
"""The web inbox's sign-in links and sessions (minted by the chats, used by ``bot.web``)."""
