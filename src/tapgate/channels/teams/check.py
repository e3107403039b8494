"""Teams' live setup check: the bot's credentials work, and each approver can be reached.

A client-credentials token from the tenant's token endpoint proves the app
id, the secret and the tenant together. Whether an approver can be reached
is not something Microsoft can be asked (a bot learns where a user is only
when the user installs the app or messages it): it is whether tapgate has
stored that conversation. Each approver gets a line naming them (what
``tapgate doctor`` counts as reached): passed when the store holds their
conversation, else failed with what to do (or, when the database could not
be opened, that it cannot tell).
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from tapgate.channels.contract import CheckResult, ConversationBook
from tapgate.channels.teams.connector import BotTokens
from tapgate.channels.teams.settings import TeamsConfig
from tapgate.errors import DeliveryError

__all__ = ["check_teams", "missing_conversations"]

_INSTALL = "no conversation yet: the approver must install the tapgate app in Teams (or message it)"
_NO_STORE = (
    "cannot tell: tapgate's database could not be opened (run `tapgate serve` with this config "
    "first; each approver then installs the tapgate app in Teams)"
)


async def check_teams(
    settings: TeamsConfig,
    addresses: Mapping[str, str],
    conversations: ConversationBook | None = None,
) -> list[CheckResult]:
    """One result for the credentials, then one per approver."""
    timeout = aiohttp.ClientTimeout(total=settings.timeout)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        tokens = BotTokens(
            app_id=settings.app_id,
            app_password=settings.app_password.get_secret_value(),
            token_url=settings.token_endpoint,
            session=lambda: session,
        )
        try:
            await tokens.get()
        except DeliveryError as error:
            detail = f"{error} (check app_id, app_password and tenant_id)"
            return [CheckResult(channel="teams", what="bot credentials", ok=False, detail=detail)]
    out = [CheckResult(channel="teams", what="bot credentials", ok=True)]
    missing = (
        list(addresses)
        if conversations is None
        else await missing_conversations(conversations, addresses)
    )
    for name, address in addresses.items():
        ok = name not in missing
        detail = "" if ok else _INSTALL if conversations is not None else _NO_STORE
        what = f"approver {name} ({address})"
        out.append(CheckResult(channel="teams", what=what, ok=ok, detail=detail, approver=name))
    return out


async def missing_conversations(
    conversations: ConversationBook, addresses: Mapping[str, str]
) -> list[str]:
    """The approvers (by name) tapgate has no Teams conversation with, in config order."""
    known = await conversations.addresses("teams")
    return [name for name, address in addresses.items() if address not in known]
