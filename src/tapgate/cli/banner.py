"""What ``tapgate serve`` says it loaded, before it listens.

The operator reads this once per start: the file, the database (password
masked), who may call the API, who approves and where each is reached, the
webhook URLs to paste into the LINE and Slack consoles (from
``server.public_url``), and warnings for what is legal but probably not meant.
"""

from __future__ import annotations

import os

from tapgate import __version__
from tapgate.channels import registry
from tapgate.cli.text import paint
from tapgate.config import Config, display_url
from tapgate.config.reachable import reachable_on

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
    """Where each enabled channel's platform must send taps: ``<server.public_url><route>``.

    A chat channel without a route connects out instead (Slack's Socket Mode,
    a long poll) and needs no public URL.
    """
    base = (config.server.public_url or "").rstrip("/")
    out: list[tuple[str, str]] = []
    for name, section in config.channels.sections.items():
        channel = registry.installed()[name]
        if name not in config.enabled_channels or channel.address is None:
            continue
        posts = [route.path for route in channel.routes(section) if route.method == "POST"]
        if not posts:
            out.append((name, "no webhook: it connects out (Socket Mode or a long poll)"))
        for path in posts:
            out.append((name, f"{base}{path}" if base else "(set server.public_url)"))
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
        out.append("server.public_url is http://: chat platforms only deliver to https://")
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
