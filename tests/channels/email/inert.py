"""What a mail (and a review page) must be whatever the agent wrote: masked, escaped, inert.

Used by the shared hostile-text property test (``tests/channels/slack/
test_slack_escaping.py``) on the mails the fake relay accepted: the HTML
part holds only the elements and attributes tapgate writes (agent text
is all character data), its one link is the review page, no ``<script``
appears in it, headers are one line, and the raw message keeps SMTP's
line limit. A review page (:func:`assert_page_inert`) likewise holds only
its own elements, and its links and forms lead only to its own link.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from tapgate.channels.email.render import SUBJECT_MAX
from tests.fakes.smtp import Mail

__all__ = ["assert_mail_inert", "assert_page_inert"]

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
PAGE_TAGS = TAGS | {
    "title",
    "style",
    "main",
    "h1",
    "form",
    "input",
    "textarea",
    "label",
    "div",
    "button",
    "code",
    "br",
    "span",
}
"""A review page's elements: the mail's, and its forms (no script, no image, no frame)."""
PAGE_ATTRIBUTES = frozenset(
    {"lang", "charset", "name", "content", "class", "method", "action", "type", "value", "id"}
    | {"for", "maxlength", "required", "rows", "href", "role", "aria-invalid", "aria-describedby"}
)
PAGE_PATH = re.compile(r"/email/review/[A-Za-z0-9_\-]+(/edit|/sign-in)?")
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


def _assert_markup(
    html: str,
    tags: frozenset[str],
    attributes: frozenset[str],
    link: re.Pattern[str],
    shown: list[str],
) -> None:
    """Only ``tags`` and ``attributes`` tapgate writes; links match ``link``; ``shown`` as text."""
    assert "<script" not in html.lower()
    parser = _Tags()
    parser.feed(html)
    parser.close()
    for tag, attrs in parser.tags:
        assert tag in tags, (tag, attrs)
        for name, value in attrs:
            assert name in attributes, (tag, name)
            if name in ("href", "action"):
                assert value is not None and link.fullmatch(value), value
    letters = "".join(parser.text)
    for piece in shown:
        assert piece in letters  # shown to the reader as the characters they are


def assert_page_inert(html: str, *, secret: str, shown: list[str]) -> None:
    """A review page: ``secret`` nowhere, only its own markup, forms posting to its link."""
    assert secret not in html
    _assert_markup(html, PAGE_TAGS, PAGE_ATTRIBUTES, PAGE_PATH, shown)


def assert_mail_inert(mail: Mail, *, secret: str, shown: list[str]) -> None:
    """``secret`` nowhere; ``shown`` (agent text that must reach the reader) read as text."""
    text, html = mail.part("plain"), mail.part("html")
    subject = mail.header("Subject")
    for part in (text, html, subject, mail.raw.decode("utf-8", "replace")):
        assert secret not in part
    _assert_markup(html, TAGS, ATTRIBUTES, REVIEW, shown)
    assert "\n" not in subject and "\r" not in subject
    assert len(subject) <= SUBJECT_MAX + len("Re: ")
    for line in mail.raw.split(b"\r\n"):
        assert len(line) <= LINE_MAX
