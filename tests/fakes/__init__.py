"""Fake LINE and Slack platform APIs for tapgate's tests.

Each fake is a real aiohttp server on 127.0.0.1 (port 0) that the real SDKs
talk to through their base-URL settings. Fakes record every request
(``fake.requests``), keep platform-level views of what was delivered
(``FakeLine.pushes``, ``FakeSlack.messages``...) and apply scripted faults,
one per call, FIFO per endpoint::

    async with FakeLine() as line:
        line.script("push", Fault.status(500), Fault.drop_after_success())
        ...
"""

from tests.fakes._faults import Fault, FaultKind
from tests.fakes._server import FakeServer, RecordedRequest
from tests.fakes.line import FakeLine, LinePush, LineReply, SentMessage
from tests.fakes.slack import (
    FakeSlack,
    MessageVersion,
    SlackEphemeral,
    SlackMessage,
    SlackPost,
    SlackUpdate,
    SlackView,
    dm_channel_for,
)

__all__ = [
    "FakeLine",
    "FakeServer",
    "FakeSlack",
    "Fault",
    "FaultKind",
    "LinePush",
    "LineReply",
    "MessageVersion",
    "RecordedRequest",
    "SentMessage",
    "SlackEphemeral",
    "SlackMessage",
    "SlackPost",
    "SlackUpdate",
    "SlackView",
    "dm_channel_for",
]
