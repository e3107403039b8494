"""``channels.email`` and ``approvers[].email``: the SMTP relay the email channel sends through."""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import Field, model_validator

from tapgate.config.fields import Duration, NonEmptyStr, Port, Secret, Section
from tapgate.errors import ConfigError

__all__ = ["EmailConfig", "parse_address", "require_public_url"]

# Deliberately plain: local@domain, no display name, no spaces, no angle
# brackets or line breaks (an address goes into a header: a newline in one
# would be a header injection).
_ADDRESS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")


class EmailConfig(Section):
    """The SMTP relay approval mails go out through, and who they come from.

    ``security``: ``starttls`` (port 587: plain connection upgraded before
    logging in), ``tls`` (port 465: TLS from the first byte) or ``none``
    (a relay on localhost or a private network only). ``username`` and
    ``password`` together, or neither (a relay that trusts the network).
    """

    smtp_host: NonEmptyStr
    smtp_port: Port = 587
    security: Literal["starttls", "tls", "none"] = "starttls"
    username: NonEmptyStr | None = None
    password: Secret | None = None
    from_: NonEmptyStr = Field(alias="from")
    timeout: Duration = 30.0

    @model_validator(mode="after")
    def _checked(self) -> Self:
        if (self.username is None) != (self.password is None):
            raise ValueError("set username and password together, or neither")
        parse_address(self.from_)
        return self


def parse_address(value: str) -> str:
    """An approver's (or the sender's) address: ``local@domain``, nothing else.

    A link is bound to the address as configured, and the review page answers
    as that address, so it is kept exactly as written.
    """
    if not _ADDRESS.fullmatch(value):
        raise ValueError("expected a plain email address like alice@example.com (no name, no <>)")
    return value


def require_public_url(public_url: str | None) -> None:
    """Mails link to a review page, which lives at ``server.public_url``: it must be set."""
    if public_url is None:
        raise ConfigError(
            "server.public_url",
            "the email channel needs it: every mail links to a review page on this server "
            "(for example https://tapgate.example.com)",
        )
