"""What ``tapgate serve`` says it loaded, before it listens.

The operator reads this once per start: the file, the database (password
masked), who may call the API, who approves and where each is reached, the
webhook URLs to paste into the LINE and Slack consoles (from
``server.public_url``), and warnings for what is legal but probably not meant.
"""

from __future__ import annotations

import os

from tapgate import __version__
from tapgate.bot.cli.text import paint
from tapgate.bot.config import Config, display_url
from tapgate.bot.config.reach import reachable_on

__all__ = ["banner", "warnings", "webhook_urls"]


def banner(config: Config, config_path: str) -> str:
    """The start-up summary, one fact per line."""
    channels = config.enabled_channels
    approvers = [
        f"{a.name} ({', '.join(reachable_on(a, channels)) or 'unreachable'})"
        for a in config.approvers
    ]
    lines = [
        paint(f"tapgate {__version__}", "bold"),
        f"  config:    {config_path}",
        f"  store:     {_store(config.store_url)}",
        f"  agents:    {', '.join(a.name for a in config.agents) or '(none)'}",
        f"  approvers: {', '.join(approvers) or '(none)'}",
        f"  channels:  {', '.join(channels) or '(none)'}",
    ]
    lines += [f"  webhook:   {channel} {url}" for channel, url in webhook_urls(config)]
    lines += [paint(f"  warning:   {text}", "yellow") for text in warnings(config)]
    return "\n".join(lines)


def _store(url: str) -> str:
    """The store URL, password masked; a relative SQLite path also as the file it opens."""
    shown = display_url(url)
    path = url.removeprefix("sqlite:///")
    if path != url and path and not path.startswith("/") and "?" not in path:
        shown += f" ({os.path.abspath(path)}, relative to the working directory)"
    return shown


def webhook_urls(config: Config) -> list[tuple[str, str]]:
    """Where LINE and Slack must send taps: ``<server.public_url>/webhooks/<channel>``."""
    base = (config.server.public_url or "").rstrip("/")
    slack = config.channels.slack
    out: list[tuple[str, str]] = []
    if config.channels.line is not None:
        out.append(("line", f"{base}/webhooks/line" if base else "(set server.public_url)"))
    if slack is not None:
        if slack.app_token is not None:
            out.append(("slack", "Socket Mode (no webhook)"))
        else:
            out.append(("slack", f"{base}/webhooks/slack" if base else "(set server.public_url)"))
    return out


def warnings(config: Config) -> list[str]:
    """What the config allows but an operator probably did not mean."""
    out: list[str] = []
    public = config.server.public_url
    needs_url = [c for c, url in webhook_urls(config) if url.startswith("(set")]
    if needs_url:
        out.append(
            f"server.public_url is not set: {' and '.join(needs_url)} cannot be told where "
            "to deliver taps"
        )
    elif public and public.startswith("http://") and webhook_urls(config):
        out.append("server.public_url is http://: LINE and Slack only deliver to https://")
    if not config.agents:
        out.append("no agents: nobody can call the agent API")
    channels = config.enabled_channels
    for approver in config.approvers:
        if not reachable_on(approver, channels):
            out.append(
                f"approver {approver.name!r} has no address on an enabled channel: "
                f"only `tapgate resolve --as {approver.name}` decides for them"
            )
    return out
