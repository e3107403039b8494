"""A fake Slack Web API served by a real local aiohttp app.

Point the real SDK at it with ``AsyncWebClient(token=..., base_url=fake.url)``
(``fake.url`` ends in ``/api/``; slack_sdk appends the method name). Like
slack.com it answers API errors with HTTP 200 and ``{"ok": false}``, takes
arguments from the query string, a form body or a JSON body, resolves a user
id given as ``channel`` to that user's ``D…`` conversation, and makes
``chat.update`` insist on that ``D…`` id and an existing ``ts``.

Besides the Web API it serves what interactivity needs: ``response_url``
endpoints (``fake.response_url(name)``; posts land in ``fake.responses``)
and Socket Mode: ``apps.connections.open`` (app-level token) returns a
``ws://`` URL on this server, which greets with ``hello``; a test pushes
envelopes with ``await fake.socket_send(...)`` and reads the client's
acknowledgements from ``fake.socket_acks``.

Every Web API answer to a valid token carries ``X-OAuth-Scopes`` (``fake.scopes``:
what the token was granted). ``users.info`` needs ``users:read`` (``missing_scope``
otherwise, with ``needed`` and ``provided``), finds a ``U``/``W`` id
(``members``: which exist; ``None``, the default, for every one) and reports
``deleted`` for a deactivated one (``deactivated``), whose DM
``conversations.open`` refuses with ``user_disabled``; :meth:`revoke` makes the bot
token answer ``token_revoked``, as an uninstalled app's does.

Message timestamps follow the wall clock (``wall_clock``, strictly increasing)
as Slack's do, so ``conversations.history(oldest=...)`` computed from the
caller's clock finds what was posted; message ``metadata`` is stored and
returned by ``conversations.history`` when ``include_all_metadata`` is set.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes._server import Action, Clock, FakeServer, RecordedRequest

DEFAULT_BOT_TOKEN = "xoxb-test-bot-token"
DEFAULT_APP_TOKEN = "xapp-test-app-token"
TEAM_ID = "T0FAKETEAM"
DEFAULT_SCOPES = ("chat:write", "im:write", "im:history", "commands")
"""What an install from docs/slack-app-manifest.yaml grants (no ``users:read``)."""
BOT_USER_ID = "U0FAKEBOT"
BOT_ID = "B0FAKEBOT"

# Form-encoded callers send these as JSON strings.
_JSON_FIELDS = ("blocks", "attachments", "view", "metadata")
_TS_STEP_MICROS = 100
_MAX_BLOCKS = 50
_MAX_BLOCKS_TEXT = 11_300
"""Text across a message's blocks past which Slack answers ``msg_blocks_too_long``.

Undocumented; the lowest figure reported (slackapi/bolt-js#2867: 11,341
characters of ``text`` refused; #2509: 13,297 for markdown blocks alone).
"""
_HISTORY_DEFAULT_LIMIT = 100
_HISTORY_MAX_LIMIT = 999

Method = Callable[[dict[str, Any], float], dict[str, Any]]


@dataclass(frozen=True, kw_only=True)
class MessageVersion:
    """The content of a message at one point in time."""

    text: str | None
    blocks: list[Any] | None
    time: float


@dataclass(kw_only=True)
class SlackMessage:
    """The current state of a posted message plus every earlier version."""

    channel: str
    ts: str
    thread_ts: str | None
    versions: list[MessageVersion] = field(default_factory=list)
    metadata: dict[str, Any] | None = None

    @property
    def text(self) -> str | None:
        return self.versions[-1].text

    @property
    def blocks(self) -> list[Any] | None:
        return self.versions[-1].blocks

    @property
    def history(self) -> list[MessageVersion]:
        """Versions replaced by ``chat.update``, oldest first."""
        return self.versions[:-1]


@dataclass(frozen=True, kw_only=True)
class SlackPost:
    """A successful ``chat.postMessage``; ``requested_channel`` is what the caller sent."""

    channel: str
    requested_channel: str
    ts: str
    text: str | None
    blocks: list[Any] | None
    thread_ts: str | None
    args: dict[str, Any]
    time: float
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class SlackUpdate:
    """A successful ``chat.update``."""

    channel: str
    ts: str
    text: str | None
    blocks: list[Any] | None
    args: dict[str, Any]
    time: float


@dataclass(frozen=True, kw_only=True)
class SlackEphemeral:
    """A successful ``chat.postEphemeral``."""

    channel: str
    user: str
    message_ts: str
    text: str | None
    blocks: list[Any] | None
    args: dict[str, Any]
    time: float


@dataclass(frozen=True, kw_only=True)
class SlackView:
    """A successful ``views.open``."""

    trigger_id: str
    view_id: str
    view: dict[str, Any]
    time: float


@dataclass(frozen=True, kw_only=True)
class SlackResponse:
    """A post to a ``response_url``: ``name`` is the part after ``/actions/``."""

    name: str
    body: dict[str, Any]
    time: float


class SlackError(Exception):
    """Internal: ends an action with ``{"ok": false, "error": error}``."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def dm_channel_for(user_id: str) -> str:
    """The stable ``D…`` conversation id the fake gives ``user_id``'s DM.

    Hashed rather than ``"D" + user_id[1:]`` so code cannot pass the tests by
    rewriting ids instead of using what Slack returns.
    """
    return "D" + hashlib.sha256(user_id.encode()).hexdigest()[:10].upper()


class FakeSlack(FakeServer):
    """Fake ``slack.com/api/``; endpoint names are the Web API method names."""

    endpoints = (
        "auth.test",
        "chat.postMessage",
        "chat.update",
        "chat.postEphemeral",
        "conversations.open",
        "conversations.history",
        "views.open",
        "users.info",
        "apps.connections.open",
        "response_url",
    )
    _url_suffix = "/api/"

    def __init__(
        self,
        *,
        bot_token: str = DEFAULT_BOT_TOKEN,
        app_token: str = DEFAULT_APP_TOKEN,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
    ) -> None:
        super().__init__(clock=clock)
        self.wall_clock = wall_clock
        self.bot_token = bot_token
        self.app_token = app_token
        self.messages: dict[tuple[str, str], SlackMessage] = {}
        self.posts: list[SlackPost] = []
        self.updates: list[SlackUpdate] = []
        self.ephemerals: list[SlackEphemeral] = []
        self.views: list[SlackView] = []
        self.responses: list[SlackResponse] = []
        self.socket_acks: list[dict[str, Any]] = []
        self.scopes: tuple[str, ...] = DEFAULT_SCOPES
        self.members: set[str] | None = None
        self.deactivated: set[str] = set()
        self._revoked: set[str] = set()
        self._sockets: list[web.WebSocketResponse] = []
        self._socket_changed = asyncio.Condition()
        self._channels: set[str] = set()
        self._used_trigger_ids: set[str] = set()
        self._next_ts = 0
        methods: dict[str, Method] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "conversations.open": self._conversations_open,
            "conversations.history": self._conversations_history,
            "views.open": self._views_open,
            "users.info": self._users_info,
        }
        for name, method in methods.items():
            self._app.router.add_route("*", f"/api/{name}", self._endpoint(name, self._rpc(method)))
        open_socket = self._endpoint("apps.connections.open", self._connections_open)
        self._app.router.add_route("*", "/api/apps.connections.open", open_socket)
        respond = self._endpoint("response_url", self._respond)
        self._app.router.add_post("/actions/{name:.*}", respond)
        self._app.router.add_get("/link/", self._socket)
        self._app.router.add_route("*", "/{tail:.*}", self._endpoint("unknown", self._unknown))
        self._app.on_shutdown.append(self._close_sockets)

    def dm_channel(self, user_id: str) -> str:
        """The ``D…`` id this fake uses for ``user_id``'s DM."""
        return dm_channel_for(user_id)

    def response_url(self, name: str) -> str:
        """A ``response_url`` on this fake, as Slack puts one in each interaction."""
        return self.url.removesuffix("/api/") + f"/actions/{name}"

    @property
    def socket_connections(self) -> int:
        """How many Socket Mode connections are open now."""
        return sum(not ws.closed for ws in self._sockets)

    async def wait_for_socket(self, *, connected: bool = True, timeout: float = 5.0) -> None:
        """Wait until a Socket Mode connection is open (or, with ``connected=False``, none is)."""
        async with asyncio.timeout(timeout), self._socket_changed:
            await self._socket_changed.wait_for(lambda: (self.socket_connections > 0) == connected)

    async def socket_send(self, message: dict[str, Any]) -> None:
        """Send ``message`` (an envelope) over the newest open Socket Mode connection."""
        open_sockets = [ws for ws in self._sockets if not ws.closed]
        if not open_sockets:
            raise RuntimeError("no Socket Mode connection is open")
        await open_sockets[-1].send_json(message)

    async def wait_for_socket_ack(self, envelope_id: str, timeout: float = 5.0) -> dict[str, Any]:
        """The client's acknowledgement of ``envelope_id``, once it arrives."""

        def found() -> dict[str, Any] | None:
            return next((a for a in self.socket_acks if a.get("envelope_id") == envelope_id), None)

        async with asyncio.timeout(timeout), self._socket_changed:
            await self._socket_changed.wait_for(lambda: found() is not None)
        ack = found()
        assert ack is not None
        return ack

    def post_times(self, channel: str) -> list[float]:
        """Clock readings of successful posts to ``channel`` (a user id means its DM)."""
        resolved = self._resolve(channel) or channel
        return [p.time for p in self.posts if p.channel == resolved]

    def revoke(self) -> None:
        """Make the current bot token answer ``token_revoked`` (the app was uninstalled)."""
        self._revoked.add(self.bot_token)

    # methods: each takes the merged arguments and returns the ok payload

    def _users_info(self, args: dict[str, Any], now: float) -> dict[str, Any]:
        if "users:read" not in self.scopes:
            raise SlackError("missing_scope")
        user = str(args.get("user") or "")
        exists = self.members is None or user in self.members
        if not user.startswith(("U", "W")) or not exists:
            raise SlackError("user_not_found")
        deleted = user in self.deactivated
        return {
            "user": {
                "id": user,
                "team_id": TEAM_ID,
                "name": f"user-{user[-4:].lower()}",
                "deleted": deleted,
                "is_bot": False,
            }
        }

    def _auth_test(self, args: dict[str, Any], now: float) -> dict[str, Any]:
        return {
            "url": "https://tapgate-fake.slack.com/",
            "team": "Tapgate Fake",
            "user": "tapgate",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def _conversations_open(self, args: dict[str, Any], now: float) -> dict[str, Any]:
        if args.get("channel"):
            channel = str(args["channel"])
            if channel not in self._channels:
                raise SlackError("channel_not_found")
            return {"channel": {"id": channel}, "no_op": True, "already_open": True}
        users = [u.strip() for u in str(args.get("users") or "").split(",") if u.strip()]
        if not users:
            raise SlackError("users_list_not_supplied")
        if any(not u.startswith(("U", "W")) for u in users):
            raise SlackError("user_not_found")
        if self.members is not None and any(u not in self.members for u in users):
            raise SlackError("user_not_found")
        if any(u in self.deactivated for u in users):
            raise SlackError("user_disabled")
        channel = dm_channel_for(users[0]) if len(users) == 1 else _mpim_for(users)
        already = channel in self._channels
        self._channels.add(channel)
        return {"channel": {"id": channel}, "no_op": already, "already_open": already}

    def _post_message(self, args: dict[str, Any], now: float) -> dict[str, Any]:
        channel = self._channel_arg(args, open_dm=True)
        text, blocks = _content(args)
        metadata = _metadata(args)
        ts = self._new_ts()
        thread_ts = args.get("thread_ts") or None
        self.messages[(channel, ts)] = SlackMessage(
            channel=channel,
            ts=ts,
            thread_ts=thread_ts,
            versions=[MessageVersion(text=text, blocks=blocks, time=now)],
            metadata=metadata,
        )
        self.posts.append(
            SlackPost(
                channel=channel,
                requested_channel=str(args["channel"]),
                ts=ts,
                text=text,
                blocks=blocks,
                thread_ts=thread_ts,
                args=args,
                time=now,
                metadata=metadata,
            )
        )
        return {"channel": channel, "ts": ts, "message": self._message_json(text, blocks, ts)}

    def _update(self, args: dict[str, Any], now: float) -> dict[str, Any]:
        channel = str(args.get("channel") or "")
        if channel not in self._channels:
            raise SlackError("channel_not_found")
        ts = str(args.get("ts") or "")
        message = self.messages.get((channel, ts))
        if message is None:
            raise SlackError("message_not_found")
        text, blocks = _content(args, require=False)
        text = text if "text" in args else message.text
        blocks = blocks if "blocks" in args else message.blocks
        message.versions.append(MessageVersion(text=text, blocks=blocks, time=now))
        self.updates.append(
            SlackUpdate(channel=channel, ts=ts, text=text, blocks=blocks, args=args, time=now)
        )
        return {
            "channel": channel,
            "ts": ts,
            "text": text or "",
            "message": self._message_json(text, blocks, ts),
        }

    def _conversations_history(self, args: dict[str, Any], now: float) -> dict[str, Any]:
        """Top-level messages newest first, ``oldest`` < ts < ``latest`` (exclusive)."""
        channel = str(args.get("channel") or "")
        if channel not in self._channels:
            raise SlackError("channel_not_found")
        oldest = _float_arg(args, "oldest", 0.0)
        latest = _float_arg(args, "latest", float("inf"))
        limit = int(_float_arg(args, "limit", _HISTORY_DEFAULT_LIMIT))
        limit = max(1, min(limit, _HISTORY_MAX_LIMIT))
        with_metadata = str(args.get("include_all_metadata") or "").lower() in ("1", "true")
        found = sorted(
            (
                m
                for m in self.messages.values()
                if m.channel == channel and m.thread_ts is None and oldest < float(m.ts) < latest
            ),
            key=lambda m: float(m.ts),
            reverse=True,
        )
        page = []
        for message in found[:limit]:
            entry = self._message_json(message.text, message.blocks, message.ts)
            if with_metadata and message.metadata is not None:
                entry["metadata"] = message.metadata
            page.append(entry)
        return {"messages": page, "has_more": len(found) > limit, "pin_count": 0}

    def _post_ephemeral(self, args: dict[str, Any], now: float) -> dict[str, Any]:
        channel = self._channel_arg(args, open_dm=False)
        user = str(args.get("user") or "")
        if not user.startswith(("U", "W")):
            raise SlackError("user_not_in_channel")
        text, blocks = _content(args)
        message_ts = self._new_ts()
        self.ephemerals.append(
            SlackEphemeral(
                channel=channel,
                user=user,
                message_ts=message_ts,
                text=text,
                blocks=blocks,
                args=args,
                time=now,
            )
        )
        return {"message_ts": message_ts}

    def _views_open(self, args: dict[str, Any], now: float) -> dict[str, Any]:
        trigger_id = str(args.get("trigger_id") or "")
        view = args.get("view")
        if not trigger_id or not isinstance(view, dict):
            raise SlackError("invalid_arguments")
        if trigger_id in self._used_trigger_ids:
            raise SlackError("exchanged_trigger_id")
        self._used_trigger_ids.add(trigger_id)
        view_id = f"V{len(self.views) + 1:010d}"
        self.views.append(SlackView(trigger_id=trigger_id, view_id=view_id, view=view, time=now))
        return {"view": {**view, "id": view_id, "team_id": TEAM_ID, "app_id": "A0FAKEAPP"}}

    # interactivity: response_url and Socket Mode

    async def _respond(self, req: RecordedRequest) -> web.Response:
        if req.body_kind != "json" or not isinstance(req.body, dict):
            return web.Response(status=400, text="invalid_payload")
        name = req.path.removeprefix("/actions/")
        self.responses.append(SlackResponse(name=name, body=req.body, time=req.time))
        return web.Response(text="ok")

    async def _connections_open(self, req: RecordedRequest) -> web.Response:
        scheme, _, token = req.headers.get("authorization", "").partition(" ")
        if scheme != "Bearer" or not token:
            return self._json({"ok": False, "error": "not_authed"})
        if token != self.app_token:
            return self._json({"ok": False, "error": "invalid_auth"})
        url = self.url.replace("http://", "ws://", 1).removesuffix("/api/")
        return self._json({"ok": True, "url": f"{url}/link/?ticket={uuid.uuid4().hex}"})

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        """One Socket Mode connection: ``hello``, then record every JSON message received."""
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        async with self._socket_changed:
            self._sockets.append(ws)
            self._socket_changed.notify_all()
        await ws.send_json({"type": "hello", "num_connections": 1, "debug_info": {}})
        try:
            async for message in ws:
                if message.type is WSMsgType.TEXT:
                    async with self._socket_changed:
                        self.socket_acks.append(json.loads(message.data))
                        self._socket_changed.notify_all()
        finally:
            async with self._socket_changed:
                self._socket_changed.notify_all()
        return ws

    async def _close_sockets(self, app: web.Application) -> None:
        for ws in list(self._sockets):
            await ws.close()

    # plumbing

    def _rpc(self, method: Method) -> Action:
        async def action(req: RecordedRequest) -> web.Response:
            try:
                self._authorize(req)
            except SlackError as error:
                return self._json({"ok": False, "error": error.error})
            scopes = {"x-oauth-scopes": ",".join(self.scopes)}
            try:
                args = _decode_args(req)
                payload = method(args, req.time)
            except SlackError as error:
                body: dict[str, Any] = {"ok": False, "error": error.error}
                if error.error == "missing_scope":
                    body |= {"needed": "users:read", "provided": ",".join(self.scopes)}
                return self._json(body, headers=scopes)
            return self._json({"ok": True, **payload}, headers=scopes)

        return action

    async def _unknown(self, req: RecordedRequest) -> web.Response:
        return self._json({"ok": False, "error": "unknown_method"}, 404)

    def _authorize(self, req: RecordedRequest) -> None:
        scheme, _, token = req.headers.get("authorization", "").partition(" ")
        if scheme != "Bearer" or not token:
            token = str(req.args.get("token") or "")
        if not token:
            raise SlackError("not_authed")
        if token in self._revoked:
            raise SlackError("token_revoked")
        if token != self.bot_token:
            raise SlackError("invalid_auth")

    def _channel_arg(self, args: dict[str, Any], *, open_dm: bool) -> str:
        requested = str(args.get("channel") or "")
        channel = self._resolve(requested)
        if channel is None:
            raise SlackError("channel_not_found")
        if open_dm or not requested.startswith(("U", "W")):
            self._channels.add(channel)
            return channel
        raise SlackError("channel_not_found")

    def _resolve(self, channel: str) -> str | None:
        """What ``channel`` names: users map to their DM; unknown D/G ids to nothing."""
        if channel.startswith(("U", "W")):
            return dm_channel_for(channel)
        if channel.startswith("C") or channel in self._channels:
            return channel
        return None

    def _new_ts(self) -> str:
        micros = max(int(self.wall_clock() * 1_000_000), self._next_ts)
        self._next_ts = micros + _TS_STEP_MICROS
        return f"{micros // 1_000_000}.{micros % 1_000_000:06d}"

    def _message_json(self, text: str | None, blocks: list[Any] | None, ts: str) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "message",
            "user": BOT_USER_ID,
            "bot_id": BOT_ID,
            "team": TEAM_ID,
            "text": text or "",
            "ts": ts,
        }
        if blocks is not None:
            message["blocks"] = blocks
        return message

    def _fault_body(self, code: int) -> Any:
        if code == 429:
            return {"ok": False, "error": "ratelimited"}
        return {"ok": False, "error": "fatal_error"}

    def _extra_headers(self) -> dict[str, str]:
        return {"x-slack-req-id": uuid.uuid4().hex}


def _decode_args(req: RecordedRequest) -> dict[str, Any]:
    if req.body_kind == "invalid_json":
        raise SlackError("invalid_json")
    args = req.args
    for name in _JSON_FIELDS:
        if isinstance(args.get(name), str):
            try:
                args[name] = json.loads(args[name])
            except ValueError:
                raise SlackError(f"invalid_{name}") from None
    return args


def _content(args: dict[str, Any], *, require: bool = True) -> tuple[str | None, list[Any] | None]:
    text = args.get("text")
    blocks = args.get("blocks")
    if blocks is not None and (not isinstance(blocks, list) or len(blocks) > _MAX_BLOCKS):
        raise SlackError("invalid_blocks")
    if blocks is not None and _text_length(blocks) > _MAX_BLOCKS_TEXT:
        raise SlackError("msg_blocks_too_long")
    if require and not text and not blocks and not args.get("attachments"):
        raise SlackError("no_text")
    return (str(text) if text is not None else None), blocks


def _text_length(node: Any) -> int:
    """Characters in every ``text`` string of ``node``, at any depth (how the cap was measured).

    Written here rather than imported from ``notifiers.batch_blocks``: the fake
    plays Slack, so it must not take its measure from the code it checks.
    """
    if isinstance(node, dict):
        return sum(
            len(value) if key == "text" and isinstance(value, str) else _text_length(value)
            for key, value in node.items()
        )
    if isinstance(node, list):
        return sum(_text_length(value) for value in node)
    return 0


def _metadata(args: dict[str, Any]) -> dict[str, Any] | None:
    metadata = args.get("metadata")
    if metadata is None:
        return None
    if not isinstance(metadata, dict) or not isinstance(metadata.get("event_type"), str):
        raise SlackError("invalid_metadata_format")
    if not isinstance(metadata.get("event_payload", {}), dict):
        raise SlackError("invalid_metadata_format")
    return metadata


def _float_arg(args: dict[str, Any], name: str, default: float) -> float:
    value = args.get(name)
    if value in (None, ""):
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise SlackError("invalid_arguments") from None


def _mpim_for(users: list[str]) -> str:
    key = ",".join(sorted(users))
    return "G" + hashlib.sha256(key.encode()).hexdigest()[:10].upper()
