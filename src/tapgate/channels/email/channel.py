"""Email as a tapgate channel: mails through an SMTP relay, answers on a review page.

Requests are mailed (:mod:`.notifier`) with a link to a page this server
serves (:mod:`.review`); opening the page decides nothing, its form does.
So the channel needs ``server.public_url`` (:meth:`EmailChannel.validate`).
aiosmtplib loads when the notifier is built, never at import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from pydantic import BaseModel

from tapgate.channels.contract import (
    AddressField,
    ChannelDefaults,
    ChannelHost,
    CheckResult,
    ConversationBook,
    DeliveryHost,
    Receiver,
    Route,
)
from tapgate.channels.email.settings import EmailConfig, parse_address, require_public_url
from tapgate.delivery.notifier import Notifier

__all__ = ["EmailChannel"]

_REVIEW = "/email/review/{token}"
_EDIT = "/email/review/{token}/edit"
_SIGN_IN = "/email/review/{token}/sign-in"


class EmailChannel(ChannelDefaults):
    """Email: for the approver with no chat app."""

    name = "email"
    settings_model: type[BaseModel] = EmailConfig
    address = AddressField(parse=parse_address)

    def validate(self, settings: BaseModel, *, public_url: str | None) -> None:
        del settings
        require_public_url(public_url)

    def notifier(self, settings: BaseModel, host: DeliveryHost) -> Notifier:
        from tapgate.channels.email.notifier import EmailNotifier  # aiosmtplib loads only when used

        return EmailNotifier(
            cast(EmailConfig, settings),
            public_url=host.public_url,
            links=None if host.review_links is None else host.review_links(self.name),
            tool_shell_args=host.tool_shell_args,
            offers=host.offers,
        )

    def routes(self, settings: BaseModel) -> Sequence[Route]:
        del settings
        return (
            Route(method="GET", path=_REVIEW, name="show"),
            Route(method="HEAD", path=_REVIEW, name="show"),
            Route(method="POST", path=_REVIEW, name="answer"),
            Route(method="GET", path=_EDIT, name="edit"),
            Route(method="HEAD", path=_EDIT, name="edit"),
            Route(method="POST", path=_EDIT, name="submit_edit"),
            Route(method="POST", path=_SIGN_IN, name="sign_in"),
        )

    async def start(self, settings: BaseModel, host: ChannelHost) -> Receiver | None:
        from tapgate.channels.email.review import ReviewPages

        del settings
        return ReviewPages(host.gate, public_url=host.public_url)

    async def check(
        self,
        settings: BaseModel,
        addresses: Mapping[str, str],
        conversations: ConversationBook | None = None,
    ) -> list[CheckResult]:
        del conversations  # nothing here depends on a stored conversation
        from tapgate.channels.email.check import check_email

        return await check_email(cast(EmailConfig, settings), addresses)
