"""Email delivery: a mail per request (or batch) and approver, a link to answer, a threaded outcome.

Each send mints a review link (:class:`~tapgate.decisions.review_links.ReviewLinks`,
bound to the request or batch and this address, ending with the request),
renders the mail from the presentation model (:mod:`.render`, :mod:`.message`)
and hands it to the relay (:mod:`.smtp`). A mail cannot be edited, but a
decision is still worth telling: :meth:`EmailNotifier.update` sends one short
outcome mail per address, in the request's thread, whoever answered and on
whichever channel. Reminders are sends of the same request again: they reply
in the thread too (``Re:``); a batch's calls are reminded as the batch, in its
thread, one mail a beat. One outcome per address, however many reminders
were sent, is kept in the store (``review_outcomes``), so two replicas (or an
update retried after a crash) do not send it twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from tapgate.channels.email.message import (
    Thread,
    ask_html,
    ask_text,
    build,
    outcome_parts,
    review_url,
)
from tapgate.channels.email.render import (
    batch_calls_html,
    batch_calls_text,
    batch_subject,
    call_html,
    call_text,
    request_subject,
)
from tapgate.channels.email.settings import EmailConfig
from tapgate.channels.email.smtp import send_message
from tapgate.decisions.remember import Offer
from tapgate.decisions.review_links import ReviewLinks
from tapgate.delivery.batch_view import present_batch
from tapgate.delivery.notifier import Receipt
from tapgate.delivery.presentation import outcome_text, present
from tapgate.errors import DeliveryError, PermanentDeliveryError
from tapgate.gate.models import Delivery, Request
from tapgate.policy.masking import clean

__all__ = ["EmailNotifier"]


class EmailNotifier:
    """Mails approval requests through an SMTP relay; answers come back through the review page."""

    channel = "email"
    edits_messages = True  # not an edit: a decision sends the thread's outcome mail

    def __init__(
        self,
        settings: EmailConfig,
        *,
        public_url: str | None,
        links: ReviewLinks | None,
        tool_shell_args: Mapping[str, str] | None = None,
        offers: Callable[[Request], Offer] | None = None,
    ) -> None:
        self._settings = settings
        self._public_url = public_url
        self._links = links
        self._tool_shell_args = dict(tool_shell_args or {})
        self._offers = offers

    def _ready(self) -> tuple[ReviewLinks, str]:
        if self._links is None or self._public_url is None:
            # The config check requires server.public_url; links need the store.
            raise PermanentDeliveryError("email needs server.public_url and the store for links")
        return self._links, self._public_url

    async def send(
        self, request: Request, delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Mail ``request`` to ``delivery.address`` with a fresh review link."""
        if request.batch_id is not None and request.escalated_at is None:
            return await self._remind_batch(request, delivery, key=key)
        links, public = self._ready()
        minted = await links.mint(
            request.id,
            batch=False,
            approver=delivery.approver,
            address=delivery.address,
            key=key,
            expires_at=request.expires_at,
        )
        offer = self._offers(request) if self._offers is not None else None
        view = present(
            request,
            tool_shell_arg=self._tool_shell_args.get(request.tool),
            offer=offer,
            now=links.gate.clock.now(),
        )
        url = review_url(public, minted.token)
        lead = (
            f"{view.agent} asks a question."
            if view.is_question
            else f"{view.agent} asks to run {view.tool}."
        )
        if not minted.first:
            lead = f"Reminder: still waiting for an answer. {lead}"
        thread = Thread(request.id, delivery.address, self._settings.from_)
        return await self._send(
            delivery,
            thread,
            subject=request_subject(view),
            first=minted.first,
            key=key,
            text=ask_text(lead, url, call_text(view)),
            html_body=ask_html(lead, url, call_html(view)),
        )

    async def send_batch(
        self, requests: Sequence[Request], delivery: Delivery, *, key: str, retried: bool = False
    ) -> Receipt:
        """Mail a batch's calls as one message with one link to the batch's review page."""
        links, public = self._ready()
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        minted = await links.mint(
            batch.batch_id,
            batch=True,
            approver=delivery.approver,
            address=delivery.address,
            key=key,
            expires_at=min(r.expires_at for r in requests),
        )
        url = review_url(public, minted.token)
        n = len(batch.calls)
        lead = f"{batch.agent} asks to run {n} call{'s' if n != 1 else ''} together."
        if not minted.first:
            lead = f"Reminder: still waiting for an answer. {lead}"
        thread = Thread(batch.batch_id, delivery.address, self._settings.from_)
        return await self._send(
            delivery,
            thread,
            subject=batch_subject(batch),
            first=minted.first,
            key=key,
            text=ask_text(lead, url, batch_calls_text(batch)),
            html_body=ask_html(lead, url, batch_calls_html(batch)),
        )

    async def _send(
        self,
        delivery: Delivery,
        thread: Thread,
        *,
        subject: str,
        first: bool,
        key: str,
        text: str,
        html_body: str,
    ) -> Receipt:
        message_id = thread.message_id(first=first, key=key)
        message = build(
            sender=self._settings.from_,
            to=delivery.address,
            subject=subject,
            message_id=message_id,
            thread_root=None if first else thread.root,
            text=text,
            html_body=html_body,
            now=self._now(),
        )
        await send_message(self._settings, message)
        ref = {"message_id": message_id, "root": thread.root, "subject": subject}
        return Receipt(channel=self.channel, address=delivery.address, ref=ref)

    async def _remind_batch(self, request: Request, delivery: Delivery, *, key: str) -> Receipt:
        """A batched call's reminder: the batch's reminder mail, once per beat, in its thread.

        The store reminds each call of a batch, but the approver got the batch
        as one mail with one link: the reminder of its first open call mails
        the batch again (a reply to it, with a link to the batch's page); the
        others, reminded in the same beat, send nothing more. Either way the
        receipt names the batch, so the outcome is the batch's one mail.
        """
        links, _ = self._ready()
        batch_id = str(request.batch_id)
        calls = await links.gate.batch_requests(batch_id)
        mine = [r for r in calls if r.is_pending and delivery.approver in r.approvers]
        covered = not mine or request.id not in {r.id for r in mine}
        if not covered and mine[0].id != request.id:
            covered = mine[0].remind_at == request.remind_at  # the first's mail covers it
        if covered:
            thread = Thread(batch_id, delivery.address, self._settings.from_)
            subject = batch_subject(present_batch(mine or [request]))
            ref = {"root": thread.root, "subject": subject, "batch": batch_id}
            return Receipt(channel=self.channel, address=delivery.address, ref=ref)
        sent = await self.send_batch(mine, delivery, key=key)
        return Receipt(
            channel=self.channel, address=sent.address, ref={**sent.ref, "batch": batch_id}
        )

    async def update(self, request: Request, receipt: Receipt) -> None:
        """Once decided, the thread's outcome mail (once per address, however many were sent)."""
        batch_id = receipt.ref.get("batch")
        if batch_id is not None:  # a batched call's reminder: the batch's one outcome
            links, _ = self._ready()
            await self.update_batch(await links.gate.batch_requests(batch_id), receipt)
            return
        if request.status == "pending":
            return
        by = clean(request.resolved_by) if request.resolved_by else None
        at = request.resolved_at or request.expires_at
        line = outcome_text(request.status, by=by, at=at, scope=request.scope)
        if request.resolution_reason:
            line += f": {clean(request.resolution_reason)}"
        await self._outcome(request.id, receipt, [line])

    async def update_batch(self, requests: Sequence[Request], receipt: Receipt) -> None:
        """Once every call of the batch is decided, one outcome mail listing them."""
        if not requests or any(r.is_pending for r in requests):
            return  # a wave of decisions, not the end: one mail at the end, not one per wave
        batch = present_batch(requests, tool_shell_args=self._tool_shell_args)
        lines = [f"{c.view.tool} [{c.view.short_id}]: {c.outcome}" for c in batch.calls]
        await self._outcome(batch.batch_id, receipt, lines)

    async def _outcome(self, subject_id: str, receipt: Receipt, lines: list[str]) -> None:
        links, _ = self._ready()
        if not await links.claim_outcome(subject_id, receipt.address):
            return  # told already (a reminder's row, another replica)
        thread = Thread(subject_id, receipt.address, self._settings.from_)
        text, html_body = outcome_parts(lines)
        message = build(
            sender=self._settings.from_,
            to=receipt.address,
            subject=receipt.ref.get("subject", "tapgate request"),
            message_id=thread.outcome_id,
            thread_root=receipt.ref.get("root", thread.root),
            text=text,
            html_body=html_body,
            now=self._now(),
        )
        try:
            await send_message(self._settings, message)
        except DeliveryError:
            await links.release_outcome(subject_id, receipt.address)  # the next update retries
            raise

    def _now(self) -> datetime:
        links, _ = self._ready()
        return links.gate.clock.now()

    async def close(self) -> None:
        """Nothing held open: each send is one SMTP session."""
