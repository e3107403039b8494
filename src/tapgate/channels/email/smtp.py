"""Handing one message to the SMTP relay, and what its answer means for the outbox.

aiosmtplib loads here, when the notifier is built, never when the channel
is imported. An SMTP relay answers in three digits: 2xx accepted, 4xx "try
again later" (greylisting, a full queue, a rate limit), 5xx "never" (no such
mailbox, relaying denied, bad credentials). A 4xx and a dropped or refused
connection are a retryable :class:`~tapgate.errors.DeliveryError`: the
delivery outbox tries again after its backoff, which survives restarts.
There is no retry inside one send: SMTP has no idempotency key, and a
message whose acceptance was lost would be sent twice by a quick retry (its
``Message-ID`` is stable, so a mail client shows such a copy once).
A 5xx is a :class:`~tapgate.errors.PermanentDeliveryError`, recorded on the
outbox row and counted like any failed delivery. Once the relay has accepted
a message, a failed ``QUIT`` is no failure (aiosmtplib ignores it): the
message is out, and a retry would send it twice.

The name tapgate gives itself in ``EHLO`` is this host's FQDN, looked up
once per process: aiosmtplib otherwise looks it up for every message
(``socket.getfqdn`` in a worker thread, which without a resolver cache can
be a DNS round trip per mail).
"""

from __future__ import annotations

import asyncio
import socket
from email.message import EmailMessage

import aiosmtplib

from tapgate.channels.email.settings import EmailConfig
from tapgate.errors import DeliveryError, PermanentDeliveryError

__all__ = ["local_hostname", "send_message"]

_local: list[str] = []


async def local_hostname() -> str:
    """This host's FQDN for ``EHLO``, looked up (in a thread: it may ask DNS) once."""
    if not _local:
        _local.append(await asyncio.to_thread(socket.getfqdn))
    return _local[0]


async def send_message(settings: EmailConfig, message: EmailMessage) -> None:
    """Send ``message`` through the relay, or raise the :class:`DeliveryError` its answer means."""
    password = settings.password.get_secret_value() if settings.password is not None else None
    try:
        await aiosmtplib.send(
            message,
            local_hostname=await local_hostname(),
            hostname=settings.smtp_host,
            port=settings.smtp_port,
            username=settings.username,
            password=password,
            use_tls=settings.security == "tls",
            # starttls: required (a relay that cannot upgrade is refused, never
            # sent the password in the clear); none: never attempted.
            start_tls={"starttls": True, "tls": False, "none": False}[settings.security],
            timeout=settings.timeout,
        )
    except aiosmtplib.SMTPRecipientsRefused as exc:
        codes = [r.code for r in exc.recipients]
        raise _by_code(min(codes) if codes else 550, f"recipient refused: {exc}") from exc
    except aiosmtplib.SMTPResponseException as exc:
        raise _by_code(exc.code, f"{type(exc).__name__}: {exc.code} {exc.message}") from exc
    except (aiosmtplib.SMTPException, OSError) as exc:  # connection refused, reset, timeout, TLS
        raise DeliveryError(f"SMTP relay unreachable: {type(exc).__name__}: {exc}") from exc


def _by_code(code: int, text: str) -> DeliveryError:
    """4xx: later; anything else the relay refused with (5xx): never."""
    if 400 <= code < 500:
        return DeliveryError(f"SMTP relay deferred the message: {text}", status=code)
    return PermanentDeliveryError(f"SMTP relay refused the message: {text}", status=code)
