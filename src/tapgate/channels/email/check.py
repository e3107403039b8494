"""The email channel's live setup check: the relay answers, and takes the credentials.

Connects as a send would (TLS, STARTTLS or plain), says ``EHLO`` and logs
in when credentials are set. Whether an approver's mailbox exists cannot be
checked honestly (most relays accept any recipient and bounce later, and
``VRFY`` is switched off almost everywhere), so each address is listed as
configured, not as verified.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiosmtplib

from tapgate.channels.contract import CheckResult
from tapgate.channels.email.settings import EmailConfig

__all__ = ["check_email"]


async def check_email(settings: EmailConfig, addresses: Mapping[str, str]) -> list[CheckResult]:
    """One result for the relay (and login), then one per approver's address."""
    where = f"{settings.smtp_host}:{settings.smtp_port} ({settings.security})"
    client = aiosmtplib.SMTP(
        hostname=settings.smtp_host,
        port=settings.smtp_port,
        use_tls=settings.security == "tls",
        start_tls=settings.security == "starttls",
        timeout=settings.timeout,
    )
    try:
        await client.connect()
        if settings.username is not None and settings.password is not None:
            await client.login(settings.username, settings.password.get_secret_value())
        await client.quit()
    except (aiosmtplib.SMTPException, OSError) as exc:
        detail = f"{type(exc).__name__}: {exc}"
        return [CheckResult(channel="email", what=f"SMTP relay {where}", ok=False, detail=detail)]
    out = [CheckResult(channel="email", what=f"SMTP relay {where}", ok=True)]
    for name, address in addresses.items():
        out.append(
            CheckResult(
                channel="email",
                what=f"approver {name} ({address})",
                ok=True,
                detail="configured; a mailbox is only known to exist once a mail arrives",
            )
        )
    return out
