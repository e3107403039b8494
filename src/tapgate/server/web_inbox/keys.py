"""Typed state of the web inbox (``web.AppKey``); its sign-ins are ``bot.keys.SIGN_INS``."""

from __future__ import annotations

from aiohttp import web

__all__ = ["SHELL_ARGS"]

SHELL_ARGS: web.AppKey[dict[str, str]] = web.AppKey("tapgate.web_shell_args")
"""Each shell tool's command argument (``policy.tools.<tool>.shell``), read once from config."""
