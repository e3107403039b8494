"""What a mail must be whatever the agent wrote: masked, escaped, inert, within limits.

Used by the shared hostile-text property test (``tests/channels/slack/
test_slack_escaping.py``) on the mails the fake relay accepted: the HTML
part holds only the elements and attributes tapgate writes (agent text
is all character data), its one link is the review page, no ``<script``
appears in it, headers are one line, and the raw message keeps SMTP's
line limit.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from tapgate.channels.email.render import SUBJECT_MAX
from tests.fakes.smtp import Mail

__all__ = ["assert_mail_inert"]

TAGS = frozenset(
    {
        "html",
        "head",
        "meta",
        "body",
        "p",
        "a",
        "small",
        "section",
        "h2",
        "dl",
        "dt",
        "dd",
        "pre",
        "b",
    }
)
ATTRIBUTES = frozenset({"style", "href", "class", "charset", "name", "content"})
REVIEW = re.compile(r"https?://[^\s\"<>]+/email/review/[A-Za-z0-9_\-]+")
LINE_MAX = 998
"""RFC 5322: a line of a message is at most 998 characters before its CRLF."""


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_mail_inert(mail: Mail, *, secret: str, shown: list[str]) -> None:
    """``secret`` nowhere; ``shown`` (agent text that must reach the reader) read as text."""
    text, html = mail.part("plain"), mail.part("html")
    subject = mail.header("Subject")
    for part in (text, html, subject, mail.raw.decode("utf-8", "replace")):
        assert secret not in part
    assert "<script" not in html.lower()  # the text part may say it: it is no markup there
    parser = _Tags()
    parser.feed(html)
    parser.close()
    for tag, attrs in parser.tags:
        assert tag in TAGS, (tag, attrs)
        for name, value in attrs:
            assert name in ATTRIBUTES, (tag, name)
            if name == "href":
                assert value is not None and REVIEW.fullmatch(value), value
    letters = "".join(parser.text)
    for piece in shown:
        assert piece in letters  # shown to the reader as the characters they are
    assert "\n" not in subject and "\r" not in subject
    assert len(subject) <= SUBJECT_MAX + len("Re: ")
    for line in mail.raw.split(b"\r\n"):
        assert len(line) <= LINE_MAX
