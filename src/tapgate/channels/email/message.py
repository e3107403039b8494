"""The mails themselves: an approval request (or a batch), a reminder, an outcome; threaded.

Each mail is ``multipart/alternative``: plain text first, HTML second, both
drawn from the same view (:mod:`.render`). A request's mails to one address
form one thread: the first carries a ``Message-ID`` derived from the request
(or batch) and the address, and every later one (a reminder, the outcome)
names it in ``In-Reply-To`` and ``References``, with the same subject after
``Re:``, which is what Gmail, Outlook, Apple Mail and Thunderbird group by.
The ``Message-ID`` of a message is stable across retries of one outbox row,
so a copy sent twice after a lost acceptance is shown once.

The link to the review page is the only way to answer: opening it decides
nothing (mail scanners open every link), the page's buttons do.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime

from tapgate.channels.email.render import e

__all__ = ["Thread", "build", "review_url"]

_HTML_HEAD = (
    '<!doctype html><html><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
    '<body style="font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:720px">'
)
_BUTTON = (
    "display:inline-block;padding:12px 20px;background:#1f6feb;color:#fff;"
    "text-decoration:none;border-radius:6px;font-weight:600"
)


def review_url(public_url: str, token: str) -> str:
    """The review page of one link: ``{server.public_url}/email/review/{token}``."""
    return f"{public_url.rstrip('/')}/email/review/{token}"


class Thread:
    """The ``Message-ID`` s of one request's (or batch's) mails to one address."""

    def __init__(self, subject_id: str, address: str, sender: str) -> None:
        domain = sender.rsplit("@", 1)[-1]
        who = hashlib.sha256(address.encode()).hexdigest()[:16]
        self._base = f"tapgate.{subject_id}.{who}"
        self._domain = domain
        self.root = f"<{self._base}@{domain}>"

    def message_id(self, *, first: bool, key: str) -> str:
        """The root for the thread's first mail; a stable id per outbox row after it."""
        if first:
            return self.root
        part = hashlib.sha256(key.encode()).hexdigest()[:16]
        return f"<{self._base}.{part}@{self._domain}>"

    @property
    def outcome_id(self) -> str:
        return f"<{self._base}.outcome@{self._domain}>"


def build(
    *,
    sender: str,
    to: str,
    subject: str,
    message_id: str,
    thread_root: str | None,
    text: str,
    html_body: str,
    now: datetime,
) -> EmailMessage:
    """One ``multipart/alternative`` mail; ``thread_root`` makes it a reply in the thread."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = subject if thread_root is None else f"Re: {subject}"
    message["Message-ID"] = message_id
    message["Date"] = format_datetime(now)
    if thread_root is not None:
        message["In-Reply-To"] = thread_root
        message["References"] = thread_root
    # Machine-sent: vacation responders and Exchange's auto-replies stay quiet.
    message["Auto-Submitted"] = "auto-generated"
    message["X-Auto-Response-Suppress"] = "All"
    message.set_content(text)
    message.add_alternative(f"{_HTML_HEAD}{html_body}</body></html>", subtype="html")
    return message


def ask_text(lead: str, url: str, calls: str) -> str:
    """A request's text part: who asks what, the link, then the calls."""
    return (
        f"{lead}\n\nReview and answer (opening the link decides nothing; "
        f"the page has the buttons):\n{url}\n\n{calls}\n"
    )


def ask_html(lead: str, url: str, calls: str) -> str:
    """A request's HTML part (``calls`` already escaped)."""
    return (
        f"<p>{e(lead)}</p>"
        f'<p><a href="{e(url)}" style="{_BUTTON}">Review and answer</a></p>'
        "<p><small>Opening the link decides nothing: the page has the buttons.</small></p>"
        f"{calls}"
    )


def outcome_parts(lines: list[str]) -> tuple[str, str]:
    """An outcome's text and HTML: one line per decided call."""
    text = "\n".join(lines) + "\n"
    html_body = "".join(f"<p><b>{e(line)}</b></p>" for line in lines)
    return text, html_body
