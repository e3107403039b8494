"""Typed state of the web inbox (``web.AppKey``): its sign-ins, made when the gate is."""

from __future__ import annotations

from aiohttp import web

from tapgate.core.sign_in import SignIns

__all__ = ["SHELL_ARGS", "SIGN_INS"]

SIGN_INS = web.AppKey("tapgate.sign_ins", SignIns)
SHELL_ARGS = web.AppKey("tapgate.web_shell_args", dict[str, str])
"""Each shell tool's command argument (``policy.tools.<tool>.shell``), read once from config."""
