"""A fake SMTP relay: a real aiosmtpd server on a loopback port that records what it accepts.

It speaks real SMTP (EHLO, MAIL, RCPT, DATA) in the test's own event loop,
so the email channel's client (aiosmtplib) is exercised end to end. It can be
scripted to refuse the next messages as a relay does: ``451`` (try later:
greylisting, a full queue) or ``550`` (never: no such mailbox), at ``DATA``
or, per address, at ``RCPT`` (``recipients_refused``); to answer ``QUIT``
with an error after accepting (``quit_reply``); or to be down
(:meth:`FakeSmtp.stop` then :meth:`start` on the same port).
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import time
from collections import deque
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session

__all__ = ["FakeSmtp", "Mail"]


@dataclass(frozen=True)
class Mail:
    """One accepted message: the envelope, the parsed message, its bytes and when it was taken."""

    mail_from: str
    rcpt_tos: tuple[str, ...]
    message: EmailMessage
    raw: bytes = b""
    """The DATA as the client sent it (line lengths, encodings: what a relay checks)."""
    time: float = 0.0
    """``time.monotonic()`` when the relay accepted it (the benchmarks' end point)."""

    @property
    def to(self) -> str:
        return self.rcpt_tos[0]

    def header(self, name: str) -> str:
        return str(self.message.get(name, "")).strip()

    def part(self, subtype: str) -> str:
        """The ``text/plain`` or ``text/html`` part, decoded."""
        body = self.message.get_body(preferencelist=(subtype,))
        assert body is not None, f"no text/{subtype} part"
        content: str = body.get_content()
        return content


class _Handler:
    def __init__(self, fake: FakeSmtp) -> None:
        self.fake = fake

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        taken = time.monotonic()  # the DATA is in: parsing it below is the fake's work, not yours
        if self.fake.refusals:
            self.fake.refused += 1
            return self.fake.refusals.popleft()
        raw = envelope.original_content or envelope.content or b""
        assert isinstance(raw, bytes)
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        mail = Mail(
            mail_from=str(envelope.mail_from),
            rcpt_tos=tuple(envelope.rcpt_tos),
            message=parsed,
            raw=raw,
            time=taken,
        )
        self.fake.mails.append(mail)
        self.fake.arrived.set()
        return "250 2.0.0 OK: queued"

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        refusal = self.fake.recipients_refused.get(address)
        if refusal is not None:
            self.fake.refused += 1
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_QUIT(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        return self.fake.quit_reply


class FakeSmtp:
    """A relay on 127.0.0.1: ``mails`` it accepted, ``refusals`` it will answer next."""

    def __init__(self) -> None:
        self.mails: list[Mail] = []
        self.refusals: deque[str] = deque()
        self.refused = 0
        self.recipients_refused: dict[str, str] = {}
        """``RCPT TO`` answers by address (``"550 5.1.1 no such mailbox"``), as a relay checks."""
        self.quit_reply = "221 Bye"
        """What ``QUIT`` is answered (a relay that drops the line after DATA: ``421 ...``)."""
        self.arrived = asyncio.Event()
        self.port = 0
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        handler = _Handler(self)
        self._server = await loop.create_server(
            lambda: SMTP(handler, hostname="fake-relay.test"), "127.0.0.1", self.port
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    def refuse(self, reply: str, times: int = 1) -> None:
        """Answer the next ``times`` messages' DATA with ``reply`` (``"451 4.3.0 later"``)."""
        self.refusals.extend([reply] * times)

    def to(self, address: str) -> list[Mail]:
        """The mails accepted for ``address``, in arrival order."""
        return [m for m in self.mails if address in m.rcpt_tos]

    async def __aenter__(self) -> FakeSmtp:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
