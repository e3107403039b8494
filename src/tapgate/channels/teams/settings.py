"""``channels.teams`` and ``approvers[].teams``: the Microsoft Teams channel's config."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from tapgate.config.fields import Duration, HttpUrl, NonEmptyStr, Secret, Section

__all__ = [
    "BOT_FRAMEWORK_METADATA",
    "TeamsConfig",
    "parse_teams_user",
    "split_address",
]

BOT_FRAMEWORK_METADATA = "https://login.botframework.com/v1/.well-known/openidconfiguration"
"""Where the Bot Connector publishes the keys it signs its requests with."""

_GUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_ADDRESS = re.compile(rf"(?P<tenant>{_GUID})/(?P<user>{_GUID})")
_TENANT = re.compile(_GUID)


def _tenant(value: str) -> str:
    # A tenant's domain ("contoso.onmicrosoft.com") works for tokens but is
    # never what activities carry in conversation.tenantId.
    if not _TENANT.fullmatch(value.strip()):
        raise ValueError(
            "expected the directory (tenant) id, a GUID (Entra admin center > Overview > Tenant ID)"
        )
    return value.strip().lower()


TenantId = Annotated[str, AfterValidator(_tenant)]


class TeamsConfig(Section):
    """The Azure Bot (single-tenant) tapgate answers as, and where its keys come from.

    ``app_id`` / ``app_password`` are the Entra app registration's client id
    and a client secret; ``tenant_id`` the directory it lives in (new bots
    are single-tenant). ``openid_metadata_url`` and ``token_url`` default to
    Microsoft's endpoints and exist so that a test (or a sovereign cloud)
    can point them elsewhere; ``token_url`` defaults to the tenant's
    ``/oauth2/v2.0/token``.
    """

    app_id: NonEmptyStr
    app_password: Secret
    tenant_id: TenantId
    openid_metadata_url: HttpUrl = BOT_FRAMEWORK_METADATA
    token_url: HttpUrl | None = None
    timeout: Duration = 10.0

    @property
    def token_endpoint(self) -> str:
        """Where client-credentials tokens for the bot are asked for."""
        if self.token_url is not None:
            return self.token_url
        return f"https://login.microsoftonline.com/{self.tenant_id}/oauth2/v2.0/token"


def parse_teams_user(value: str) -> str:
    """``<tenant id>/<Entra object id>``: what a press from this person carries.

    Normalised to lower case (GUIDs are case-insensitive; Teams sends them in
    lower case). The app-scoped ``29:`` id and display names are refused:
    the first differs per bot and the second is anyone's to choose.
    """
    text = value.strip()
    if text.startswith(("29:", "8:orgid:")) or _ADDRESS.fullmatch(text) is None:
        raise ValueError(
            "expected '<tenant id>/<Entra object id>' (two GUIDs; the user's Object ID is on "
            "their profile in the Entra admin center, or send 'id' to the bot in Teams), "
            "never a display name or a 29: id"
        )
    return text.lower()


def split_address(address: str) -> tuple[str, str]:
    """``(tenant id, object id)`` of an address :func:`parse_teams_user` accepted."""
    tenant, _, user = address.partition("/")
    return tenant, user
