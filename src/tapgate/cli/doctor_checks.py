"""What ``tapgate doctor`` checks live: each channel, each approver's reach, the public URL.

``check-config`` proves the file is consistent; this proves the world agrees
with it, before the first real request finds out:

- **each enabled channel**: :meth:`~tapgate.channels.contract.Channel.check`
  asks the platform (LINE's bot info and each approver's profile, Slack's
  ``auth.test``, its scopes and each approver's ``users.info``, and what
  every other installed channel checks, given the store's conversations:
  Teams says per approver whether they installed the app yet); a check that
  raises or hangs is a failed line, never a traceback;
- **each approver the policy can ask** is reachable on some channel: a
  channel's line naming them passed (a channel whose check names nobody, the
  console, reaches everyone it has an address for when all its lines pass);
- **``server.public_url``**, where set, answers ``GET /healthz`` (the
  platforms' webhooks and every sign-in link go there).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence

import aiohttp

from tapgate.channels import registry
from tapgate.channels.contract import CheckResult, ConversationBook
from tapgate.config import Config
from tapgate.config.policy import RuleConfig

__all__ = ["CHECK_TIMEOUT", "askable", "check_channels", "check_public_url", "check_reach"]

CHECK_TIMEOUT = 30.0
"""Seconds one channel's check may take before it is a failed line."""


async def check_channels(
    config: Config, conversations: ConversationBook | None = None
) -> dict[str, list[CheckResult]]:
    """Every enabled channel's own check, by channel, in delivery order.

    ``conversations`` is the store's conversation book (``None``: the database
    could not be opened), for a channel that can message an approver only
    where they messaged it first (Teams) to say, per approver, whether it can.
    """
    out: dict[str, list[CheckResult]] = {}
    for name in config.enabled_channels:
        channel = registry.get(name)
        if channel is None:  # the config was validated against the registry
            continue
        settings = config.channels.section(name) or channel.settings_model.model_validate({})
        addresses = {
            approver.name: address
            for approver in config.approvers
            if (address := approver.addresses().get(name)) is not None
        }
        try:
            async with asyncio.timeout(CHECK_TIMEOUT):
                out[name] = list(await channel.check(settings, addresses, conversations))
        except TimeoutError:
            out[name] = [_failed(name, f"no answer within {CHECK_TIMEOUT:g}s")]
        except Exception as exc:  # a plugin's bug is a failed line, not a traceback
            out[name] = [_failed(name, f"the check itself failed: {exc!r}")]
    return out


def askable(config: Config) -> tuple[str, ...]:
    """The approvers some request can be sent to, in config order.

    The default approvers (a risk default can ask with no rule naming
    anyone), each asking rule's approvers (or the defaults when it names
    none), and everyone an escalation adds; an empty list means everyone.
    """
    policy = config.policy
    directory = config.directory()
    names = set(directory.expand(policy.default_approvers))
    if policy.escalate_to:
        names.update(directory.expand(policy.escalate_to))
    for rule in _rules(config):
        if rule.action == "ask":
            names.update(directory.expand(rule.approvers or policy.default_approvers))
        if rule.escalate_to:
            names.update(directory.expand(rule.escalate_to))
    return tuple(name for name in directory.names if name in names)


def check_reach(config: Config, checked: Mapping[str, Sequence[CheckResult]]) -> list[CheckResult]:
    """One line per approver the policy can ask: the channels their check passed on."""
    out: list[CheckResult] = []
    by_name = {a.name: a for a in config.approvers}
    for name in askable(config):
        addresses = by_name[name].addresses()
        reached = [
            channel
            for channel, results in checked.items()
            if _reaches(channel, results, name, addresses)
        ]
        tried = [c for c in checked if c in addresses or _reaches_all(c)]
        detail = (
            f"on {', '.join(reached)}"
            if reached
            else f"no channel reaches them (tried: {', '.join(tried) or 'none'})"
        )
        out.append(
            CheckResult(
                channel="", what=f"approver {name} reachable", ok=bool(reached), detail=detail
            )
        )
    return out


async def check_public_url(config: Config) -> list[CheckResult]:
    """``server.public_url`` answers ``/healthz`` (no line when it is not set)."""
    public = config.server.public_url
    if public is None:
        return []
    url = str(public).rstrip("/") + "/healthz"
    what = f"public_url {public}"
    try:
        timeout = aiohttp.ClientTimeout(total=10)
        async with aiohttp.ClientSession(timeout=timeout) as http, http.get(url) as response:
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        return [CheckResult(channel="", what=what, ok=False, detail=f"GET /healthz: {exc!r}")]
    ok = status == 200
    detail = "" if ok else f"GET /healthz answered {status} (is this URL tapgate's?)"
    return [CheckResult(channel="", what=what, ok=ok, detail=detail)]


def _reaches(
    channel: str, results: Sequence[CheckResult], name: str, addresses: Mapping[str, str]
) -> bool:
    named = [r for r in results if r.approver is not None]
    if named:
        return any(r.approver == name and r.ok for r in named)
    has_one = channel in addresses or _reaches_all(channel)
    return has_one and all(r.ok for r in results)


def _reaches_all(channel: str) -> bool:
    """A channel without addresses (the console) reaches every approver."""
    found = registry.get(channel)
    return found is not None and found.address is None


def _rules(config: Config) -> Iterator[RuleConfig]:
    yield from config.policy.rules
    for agent in config.policy.agents.values():
        yield from agent.rules


def _failed(channel: str, detail: str) -> CheckResult:
    return CheckResult(channel=channel, what="check", ok=False, detail=detail)
