"""A fake LINE Messaging API (push and reply) served by a real local aiohttp app.

Point the real SDK at it with ``Configuration(host=fake.url, access_token=...)``.
It behaves like ``api.line.me`` where tapgate depends on it: bearer-token
auth (401), body validation (400 with ``details``), single-use reply tokens,
and ``X-Line-Retry-Key`` idempotency (a key already accepted answers 409 with
``x-line-accepted-request-id`` and is *not* delivered again). ``GET
/v2/bot/info`` answers for a valid token only; ``GET /v2/bot/profile/{userId}``
answers 404 for a user who has not added the bot (``friends``: who has;
``None``, the default, for every well-formed user id). :meth:`revoke` makes
the token fail as a reissued channel's old token does.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes._line_rules import check_messages
from tests.fakes._server import Clock, FakeServer, RecordedRequest

PUSH_PATH = "/v2/bot/message/push"
REPLY_PATH = "/v2/bot/message/reply"
BOT_INFO_PATH = "/v2/bot/info"
PROFILE_PATH = "/v2/bot/profile/{user_id}"
DEFAULT_TOKEN = "line-test-channel-access-token"
BOT_USER_ID = "U" + "b07" * 10 + "ab"

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE)
_USER_ID = re.compile(r"^U[0-9a-f]{32}$")
_FIRST_MESSAGE_ID = 500_000_000_000_000_001


@dataclass(frozen=True, kw_only=True)
class SentMessage:
    """The id and quote token LINE assigns to each delivered message."""

    id: str
    quote_token: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "quoteToken": self.quote_token}


@dataclass(frozen=True, kw_only=True)
class LinePush:
    """A push the fake delivered (exactly once per accepted retry key)."""

    to: str
    messages: list[dict[str, Any]]
    retry_key: str | None
    notification_disabled: bool
    request_id: str
    sent_messages: tuple[SentMessage, ...]
    time: float


@dataclass(frozen=True, kw_only=True)
class LineReply:
    """A reply the fake delivered."""

    reply_token: str
    messages: list[dict[str, Any]]
    notification_disabled: bool
    request_id: str
    sent_messages: tuple[SentMessage, ...]
    time: float


class FakeLine(FakeServer):
    """Fake ``api.line.me``: endpoints ``"push"`` and ``"reply"``.

    ``pushes`` / ``replies`` hold what was delivered; ``requests`` holds every
    request, including rejected and faulted ones.
    """

    endpoints = ("push", "reply", "bot_info", "profile")

    def __init__(self, *, access_token: str = DEFAULT_TOKEN, clock: Clock = time.monotonic) -> None:
        super().__init__(clock=clock)
        self.access_token = access_token
        self.pushes: list[LinePush] = []
        self.replies: list[LineReply] = []
        self._accepted: dict[str, LinePush] = {}
        self._used_reply_tokens: set[str] = set()
        self._next_message_id = _FIRST_MESSAGE_ID
        self._app.router.add_post(PUSH_PATH, self._endpoint("push", self._push))
        self._app.router.add_post(REPLY_PATH, self._endpoint("reply", self._reply))
        self._app.router.add_get(BOT_INFO_PATH, self._endpoint("bot_info", self._bot_info))
        self._app.router.add_get(PROFILE_PATH, self._endpoint("profile", self._profile))
        self.friends: set[str] | None = None
        self._revoked: set[str] = set()
        self._app.router.add_route("*", "/{tail:.*}", self._endpoint("unknown", self._not_found))

    def pushed_to(self, to: str) -> list[dict[str, Any]]:
        """Every message object delivered to ``to`` by push, in order."""
        return [m for push in self.pushes if push.to == to for m in push.messages]

    def expire_reply_token(self, reply_token: str) -> None:
        """Make ``reply_token`` invalid, as LINE does after about a minute."""
        self._used_reply_tokens.add(reply_token)

    def revoke(self) -> None:
        """Make the current access token invalid (reissued in the console, or revoked)."""
        self._revoked.add(self.access_token)

    # actions

    async def _bot_info(self, req: RecordedRequest) -> web.Response:
        if (denied := self._authenticate(req)) is not None:
            return denied
        body = {
            "userId": BOT_USER_ID,
            "basicId": "@123tapgt",
            "displayName": "tapgate (fake)",
            "chatMode": "bot",
            "markAsReadMode": "auto",
        }
        return self._json(body)

    async def _profile(self, req: RecordedRequest) -> web.Response:
        if (denied := self._authenticate(req)) is not None:
            return denied
        user_id = req.path.rsplit("/", 1)[-1]
        known = self.friends is None or user_id in self.friends
        if not _USER_ID.match(user_id) or not known:
            return self._json({"message": "Not found"}, 404)
        return self._json(
            {"displayName": f"user {user_id[-4:]}", "userId": user_id, "language": "en"}
        )

    async def _push(self, req: RecordedRequest) -> web.Response:
        if (denied := self._authenticate(req)) is not None:
            return denied
        retry_key = req.headers.get("x-line-retry-key")
        if retry_key is not None:
            if not _UUID.match(retry_key):
                message = "The value for the 'X-Line-Retry-Key' header is invalid"
                return self._json({"message": message}, 400)
            if (earlier := self._accepted.get(retry_key)) is not None:
                return self._already_accepted(earlier)
        body = req.body if isinstance(req.body, dict) else {}
        if (invalid := self._validate(req, body, "to")) is not None:
            return invalid
        push = LinePush(
            to=body["to"],
            messages=body["messages"],
            retry_key=retry_key,
            notification_disabled=bool(body.get("notificationDisabled", False)),
            request_id=str(uuid.uuid4()),
            sent_messages=self._assign_ids(len(body["messages"])),
            time=req.time,
        )
        self.pushes.append(push)
        if retry_key is not None:
            self._accepted[retry_key] = push
        return self._sent(push.sent_messages, push.request_id)

    async def _reply(self, req: RecordedRequest) -> web.Response:
        if (denied := self._authenticate(req)) is not None:
            return denied
        body = req.body if isinstance(req.body, dict) else {}
        if (invalid := self._validate(req, body, "replyToken")) is not None:
            return invalid
        token = body["replyToken"]
        if token in self._used_reply_tokens:
            return self._json({"message": "Invalid reply token"}, 400)
        self._used_reply_tokens.add(token)
        reply = LineReply(
            reply_token=token,
            messages=body["messages"],
            notification_disabled=bool(body.get("notificationDisabled", False)),
            request_id=str(uuid.uuid4()),
            sent_messages=self._assign_ids(len(body["messages"])),
            time=req.time,
        )
        self.replies.append(reply)
        return self._sent(reply.sent_messages, reply.request_id)

    async def _not_found(self, req: RecordedRequest) -> web.Response:
        return self._json({"message": "Not found"}, 404)

    # helpers

    def _authenticate(self, req: RecordedRequest) -> web.Response | None:
        header = req.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme != "Bearer" or not token:
            message = (
                "Authorization header required. "
                "Must follow the scheme, 'Authorization: Bearer <ACCESS TOKEN>'"
            )
            return self._json({"message": message}, 401)
        if token != self.access_token or token in self._revoked:
            message = (
                "Authentication failed. Confirm that the access token "
                "in the authorization header is valid."
            )
            return self._json({"message": message}, 401)
        return None

    def _validate(
        self, req: RecordedRequest, body: dict[str, Any], target: str
    ) -> web.Response | None:
        if req.body_kind != "json" or not isinstance(req.body, dict):
            return self._json({"message": "The request body could not be parsed as JSON"}, 400)
        details = check_messages(body.get("messages"))
        if not isinstance(body.get(target), str) or not body[target]:
            details.insert(0, {"message": "must be specified", "property": target})
        if not details:
            return None
        message = f"The request body has {len(details)} error(s)"
        return self._json({"message": message, "details": details}, 400)

    def _already_accepted(self, earlier: LinePush) -> web.Response:
        body = {
            "message": "The retry key is already accepted",
            "sentMessages": [m.to_json() for m in earlier.sent_messages],
        }
        return self._json(body, 409, {"x-line-accepted-request-id": earlier.request_id})

    def _assign_ids(self, count: int) -> tuple[SentMessage, ...]:
        first, self._next_message_id = self._next_message_id, self._next_message_id + count
        return tuple(
            SentMessage(id=str(n), quote_token=f"fakeQuoteToken{n}")
            for n in range(first, first + count)
        )

    def _sent(self, sent: tuple[SentMessage, ...], request_id: str) -> web.Response:
        body = {"sentMessages": [m.to_json() for m in sent]}
        return web.json_response(body, headers={"x-line-request-id": request_id})

    def _fault_body(self, code: int) -> Any:
        if code == 429:
            return {"message": "Too Many Requests"}
        if code >= 500:
            return {"message": "Internal server error"}
        return {"message": f"HTTP {code}"}

    def _extra_headers(self) -> dict[str, str]:
        return {"x-line-request-id": str(uuid.uuid4())}
