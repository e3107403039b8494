"""A fake Discord (REST API and the interaction signer) served by a real local aiohttp app.

Point the channel at it with ``api_base_url: fake.url`` (it serves under
``/api/v10`` as Discord does). It behaves like Discord where tapgate depends
on it:

- ``Authorization: Bot <token>`` or a 401 (``{"message": "401: Unauthorized", "code": 0}``);
- ``GET /users/@me``; ``POST /users/@me/channels`` (one DM channel per user,
  the same every time; an unknown user is a 400 with code 50035);
- ``POST /channels/{id}/messages`` and ``PATCH /channels/{id}/messages/{id}``,
  checked against Discord's documented limits (content 2000, embed title 256,
  description 4096, fields 25 of name 256 / value 1024, footer 2048, 6000
  across an embed; ≤ 5 action rows of ≤ 5 buttons, label ≤ 80,
  ``custom_id`` 1-100 and unique in the message): a violation is a 400 with
  code 50035, as Discord refuses the whole message;
- users who cannot be messaged: 403 with code 50007 ("Cannot send messages to
  this user") or 50278 (no mutual guilds);
- ``nonce`` + ``enforce_nonce``: the same nonce in the same channel returns
  the message created first, and creates nothing;
- per-route buckets: every answer carries ``X-RateLimit-Bucket`` /
  ``-Limit`` / ``-Remaining`` / ``-Reset-After``; a call past a bucket's
  limit is a 429 with a float ``retry_after`` in its JSON body, ``global``
  false, and ``Retry-After``; scripted faults can send ``global: true``;
- interaction follow-ups (``POST /webhooks/{application}/{token}``), recorded;
- the application's global slash commands: ``PUT /applications/{id}/commands``
  (bulk overwrite: names 1-32 lower-case characters, descriptions 1-100,
  at most 100 commands, else 400 / 50035; another application's id is a 403
  with code 50001) and ``GET`` of the same route;
- link buttons (style 5): a ``url`` and no ``custom_id``; every other style
  the reverse.

:class:`Signer` is Discord's side of the Interactions Endpoint: an Ed25519
key pair the test generates, signing ``timestamp + body`` exactly as Discord
does, and building the interaction payloads Discord sends.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from tests.fakes._server import Clock, FakeServer, RecordedRequest

__all__ = [
    "APPLICATION_ID",
    "BOT_ID",
    "BOT_TOKEN",
    "DiscordMessage",
    "FakeDiscord",
    "Signer",
]

APPLICATION_ID = "111111111111111111"
BOT_ID = APPLICATION_ID
BOT_TOKEN = "MTExMTExMTExMTExMTExMTEx.GfakeX.fake-discord-bot-token_0123456789"
_PREFIX = "/api/v10"
_TOTAL_EMBED = 6000


@dataclass
class DiscordMessage:
    """A message as the fake holds it: the latest body and every version it had."""

    id: str
    channel_id: str
    nonce: str | None
    versions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def body(self) -> dict[str, Any]:
        return self.versions[-1]

    @property
    def text(self) -> str:
        """Everything the latest version shows, as one string (for ``in`` checks)."""
        return json.dumps(self.body, ensure_ascii=False)

    @property
    def custom_ids(self) -> list[str]:
        rows = self.body.get("components") or []
        return [b["custom_id"] for row in rows for b in row["components"] if "custom_id" in b]


@dataclass
class _Bucket:
    used: int = 0
    resets_at: float = 0.0


class FakeDiscord(FakeServer):
    """Fake ``discord.com/api/v10``: ``me``, ``open_dm``, ``create``, ``edit``, ``follow_up``.

    ``users`` are the user ids that exist; ``unreachable`` maps a user to the
    error code a message to them gets (50007, 50278). ``limits`` maps a
    bucket (``dm``, ``messages``, ``edits``) to the calls it allows per
    ``window`` seconds, per channel.
    """

    endpoints = ("me", "open_dm", "create", "edit", "follow_up", "commands", "list_commands")
    _url_suffix = _PREFIX

    def __init__(
        self,
        *,
        users: set[str] | None = None,
        bot_token: str = BOT_TOKEN,
        limits: Mapping[str, int] | None = None,
        window: float = 1.0,
        clock: Clock = time.monotonic,
    ) -> None:
        super().__init__(clock=clock)
        self.bot_token = bot_token
        self.users: set[str] | None = users  # None: every snowflake is a user
        self.unreachable: dict[str, int] = {}
        self.limits = {"dm": 50, "messages": 50, "edits": 50, **(limits or {})}
        self.window = window
        self.messages: dict[str, DiscordMessage] = {}
        self.dms: dict[str, str] = {}
        self.follow_ups: list[tuple[str, dict[str, Any]]] = []
        self.commands: list[dict[str, Any]] = []
        self.rate_limited = 0
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._ids = itertools.count(900_000_000_000_000_001)
        router = self._app.router
        router.add_get(f"{_PREFIX}/users/@me", self._endpoint("me", self._me))
        router.add_post(f"{_PREFIX}/users/@me/channels", self._endpoint("open_dm", self._open_dm))
        router.add_post(
            f"{_PREFIX}/channels/{{channel}}/messages", self._endpoint("create", self._create)
        )
        router.add_patch(
            f"{_PREFIX}/channels/{{channel}}/messages/{{message}}",
            self._endpoint("edit", self._edit),
        )
        router.add_post(
            f"{_PREFIX}/webhooks/{{application}}/{{token}}",
            self._endpoint("follow_up", self._follow_up),
        )
        commands = f"{_PREFIX}/applications/{{application}}/commands"
        router.add_put(commands, self._endpoint("commands", self._put_commands))
        router.add_get(commands, self._endpoint("list_commands", self._list_commands))
        router.add_route("*", "/{tail:.*}", self._endpoint("unknown", self._not_found))

    # views for tests

    def dm_of(self, user: str) -> str | None:
        """The DM channel id of ``user`` (``None`` until the bot opened it)."""
        return self.dms.get(user)

    def cards_to(self, user: str) -> list[DiscordMessage]:
        """The messages in ``user``'s DM with the bot, in order."""
        channel = self.dms.get(user)
        return [m for m in self.messages.values() if m.channel_id == channel]

    # actions

    async def _me(self, req: RecordedRequest) -> web.Response:
        if (denied := self._auth(req)) is not None:
            return denied
        return self._answer(req, "me", "", {"id": BOT_ID, "username": "tapgate", "bot": True})

    async def _open_dm(self, req: RecordedRequest) -> web.Response:
        if (denied := self._auth(req)) is not None:
            return denied
        if (limited := self._limit(req, "dm", "")) is not None:
            return limited
        body = req.body if isinstance(req.body, dict) else {}
        user = body.get("recipient_id")
        if (
            not isinstance(user, str)
            or not user.isdigit()
            or (self.users is not None and user not in self.users)
        ):
            return self._invalid(req, "dm", "", {"recipient_id": "Value is not a known user."})
        channel = self.dms.setdefault(user, str(next(self._ids)))
        answer = {"id": channel, "type": 1, "recipients": [{"id": user}]}
        return self._answer(req, "dm", "", answer)

    async def _create(self, req: RecordedRequest) -> web.Response:
        if (denied := self._auth(req)) is not None:
            return denied
        channel = req.path.split("/")[-2]
        if (limited := self._limit(req, "messages", channel)) is not None:
            return limited
        user = next((u for u, c in self.dms.items() if c == channel), None)
        if user is None:
            return self._error(req, "messages", channel, 404, 10003, "Unknown Channel")
        if user in self.unreachable:
            code = self.unreachable[user]
            text = {
                50007: "Cannot send messages to this user",
                50278: "Cannot send messages to this user: no mutual guilds",
            }.get(code, "Forbidden")
            return self._error(req, "messages", channel, 403, code, text)
        body = req.body if isinstance(req.body, dict) else {}
        if problems := _problems(body):
            return self._invalid(req, "messages", channel, problems)
        nonce = body.get("nonce") if body.get("enforce_nonce") else None
        if nonce is not None:
            earlier = next(
                (m for m in self.messages.values() if m.channel_id == channel and m.nonce == nonce),
                None,
            )
            if earlier is not None:
                return self._answer(req, "messages", channel, _message_json(earlier))
        message = DiscordMessage(id=str(next(self._ids)), channel_id=channel, nonce=nonce)
        message.versions.append(_shown(body))
        self.messages[message.id] = message
        return self._answer(req, "messages", channel, _message_json(message))

    async def _edit(self, req: RecordedRequest) -> web.Response:
        if (denied := self._auth(req)) is not None:
            return denied
        channel, message_id = req.path.split("/")[-3], req.path.split("/")[-1]
        if (limited := self._limit(req, "edits", channel)) is not None:
            return limited
        message = self.messages.get(message_id)
        if message is None or message.channel_id != channel:
            return self._error(req, "edits", channel, 404, 10008, "Unknown Message")
        body = req.body if isinstance(req.body, dict) else {}
        if problems := _problems(body):
            return self._invalid(req, "edits", channel, problems)
        message.versions.append({**message.body, **_shown(body)})
        return self._answer(req, "edits", channel, _message_json(message))

    async def _follow_up(self, req: RecordedRequest) -> web.Response:
        body = req.body if isinstance(req.body, dict) else {}
        token = req.path.split("/")[-1]
        self.follow_ups.append((token, body))
        return self._json({"id": str(next(self._ids)), **body})

    async def _put_commands(self, req: RecordedRequest) -> web.Response:
        if (denied := self._auth(req)) is not None:
            return denied
        if req.path.split("/")[-2] != APPLICATION_ID:
            return self._json({"message": "Missing Access", "code": 50001}, 403)
        body = req.body if isinstance(req.body, list) else None
        if body is None or len(body) > 100:
            return self._invalid(req, "", "", {"_errors": "Must be a list of 100 or fewer."})
        problems: dict[str, str] = {}
        for index, command in enumerate(body):
            name = command.get("name") if isinstance(command, dict) else None
            text = command.get("description") if isinstance(command, dict) else None
            if not isinstance(name, str) or re.fullmatch(r"[-_a-z0-9]{1,32}", name) is None:
                problems[f"{index}.name"] = "Command name is invalid"
            if not isinstance(text, str) or not 1 <= len(text) <= 100:
                problems[f"{index}.description"] = "Must be between 1 and 100 in length."
        if problems:
            return self._invalid(req, "", "", problems)
        self.commands = [
            {**command, "id": str(next(self._ids)), "application_id": APPLICATION_ID}
            for command in body
        ]
        return self._json(self.commands)

    async def _list_commands(self, req: RecordedRequest) -> web.Response:
        if (denied := self._auth(req)) is not None:
            return denied
        return self._json(self.commands)

    async def _not_found(self, req: RecordedRequest) -> web.Response:
        return self._json({"message": "404: Not Found", "code": 0}, 404)

    # helpers

    def _auth(self, req: RecordedRequest) -> web.Response | None:
        if req.headers.get("authorization") != f"Bot {self.bot_token}":
            return self._json({"message": "401: Unauthorized", "code": 0}, 401)
        return None

    def _limit(self, req: RecordedRequest, bucket: str, major: str) -> web.Response | None:
        state = self._state(bucket, major, req.time)
        if state.used < self.limits[bucket]:
            state.used += 1
            return None
        self.rate_limited += 1
        retry_after = round(max(state.resets_at - req.time, 0.001), 3)
        body = {
            "message": "You are being rate limited.",
            "retry_after": retry_after,
            "global": False,
        }
        headers = {
            **self._limit_headers(bucket, major, req.time),
            "Retry-After": str(max(1, round(retry_after))),
            "X-RateLimit-Scope": "user",
        }
        return self._json(body, 429, headers)

    def _state(self, bucket: str, major: str, now: float) -> _Bucket:
        state = self._buckets.setdefault((bucket, major), _Bucket(resets_at=now + self.window))
        if now >= state.resets_at:
            state.used, state.resets_at = 0, now + self.window
        return state

    def _limit_headers(self, bucket: str, major: str, now: float) -> dict[str, str]:
        state = self._state(bucket, major, now)
        return {
            "X-RateLimit-Bucket": f"fake-{bucket}",
            "X-RateLimit-Limit": str(self.limits[bucket]),
            "X-RateLimit-Remaining": str(max(self.limits[bucket] - state.used, 0)),
            "X-RateLimit-Reset-After": f"{max(state.resets_at - now, 0):.3f}",
        }

    def _answer(self, req: RecordedRequest, bucket: str, major: str, body: Any) -> web.Response:
        headers = self._limit_headers(bucket, major, req.time) if bucket in self.limits else {}
        return self._json(body, 200, headers)

    def _error(
        self, req: RecordedRequest, bucket: str, major: str, status: int, code: int, text: str
    ) -> web.Response:
        return self._json(
            {"message": text, "code": code}, status, self._limit_headers(bucket, major, req.time)
        )

    def _invalid(
        self, req: RecordedRequest, bucket: str, major: str, errors: Mapping[str, str]
    ) -> web.Response:
        body = {"message": "Invalid Form Body", "code": 50035, "errors": dict(errors)}
        return self._json(body, 400, self._limit_headers(bucket, major, req.time))

    def _fault_body(self, code: int) -> Any:
        if code == 429:
            return {"message": "You are being rate limited.", "retry_after": 0.05, "global": False}
        return {"message": f"{code}: error", "code": 0}


def _shown(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k in ("content", "embeds", "components", "flags")}


def _message_json(message: DiscordMessage) -> dict[str, Any]:
    return {
        "id": message.id,
        "channel_id": message.channel_id,
        "nonce": message.nonce,
        **message.body,
    }


def _problems(body: Mapping[str, Any]) -> dict[str, str]:
    """Where ``body`` breaks Discord's documented message limits (empty: none)."""
    problems: dict[str, str] = {}
    content = body.get("content")
    if content is not None and (not isinstance(content, str) or len(content) > 2000):
        problems["content"] = "Must be 2000 or fewer in length."
    nonce = body.get("nonce")
    if nonce is not None and (not isinstance(nonce, str) or len(nonce) > 25):
        problems["nonce"] = "Must be 25 or fewer in length."
    embeds = body.get("embeds") or []
    if len(embeds) > 10:
        problems["embeds"] = "Must be 10 or fewer in length."
    for index, embed in enumerate(embeds):
        problems.update(_embed_problems(embed, f"embeds.{index}"))
    problems.update(_component_problems(body.get("components") or []))
    return problems


def _embed_problems(embed: Mapping[str, Any], where: str) -> dict[str, str]:
    problems: dict[str, str] = {}
    total = 0
    for key, limit in (("title", 256), ("description", 4096)):
        text = embed.get(key) or ""
        total += len(text)
        if len(text) > limit:
            problems[f"{where}.{key}"] = f"Must be {limit} or fewer in length."
    fields = embed.get("fields") or []
    if len(fields) > 25:
        problems[f"{where}.fields"] = "Must be 25 or fewer in length."
    for index, item in enumerate(fields):
        name, value = item.get("name") or "", item.get("value") or ""
        total += len(name) + len(value)
        if not name or len(name) > 256:
            problems[f"{where}.fields.{index}.name"] = "Must be between 1 and 256 in length."
        if not value or len(value) > 1024:
            problems[f"{where}.fields.{index}.value"] = "Must be between 1 and 1024 in length."
    footer = (embed.get("footer") or {}).get("text") or ""
    total += len(footer)
    if len(footer) > 2048:
        problems[f"{where}.footer.text"] = "Must be 2048 or fewer in length."
    if total > _TOTAL_EMBED:
        problems[where] = "Embed size exceeds maximum size of 6000"
    return problems


def _component_problems(rows: list[Any]) -> dict[str, str]:
    problems: dict[str, str] = {}
    if len(rows) > 5:
        problems["components"] = "Must be 5 or fewer in length."
    seen: set[str] = set()
    for r, row in enumerate(rows):
        buttons = row.get("components") or [] if isinstance(row, dict) else []
        if not isinstance(row, dict) or row.get("type") != 1 or not 1 <= len(buttons) <= 5:
            problems[f"components.{r}"] = "An action row holds 1 to 5 components."
            continue
        for b, button in enumerate(buttons):
            where = f"components.{r}.components.{b}"
            label, custom_id = button.get("label") or "", button.get("custom_id")
            if button.get("type") != 2 or button.get("style") not in (1, 2, 3, 4, 5):
                problems[where] = "Invalid button."
            if len(label) > 80:
                problems[f"{where}.label"] = "Must be 80 or fewer in length."
            if button.get("style") == 5:
                url = button.get("url")
                if custom_id is not None or not isinstance(url, str) or len(url) > 512:
                    problems[where] = "A link button has a url (512 or fewer) and no custom_id."
                continue
            if not isinstance(custom_id, str) or not 1 <= len(custom_id) <= 100:
                problems[f"{where}.custom_id"] = "Must be between 1 and 100 in length."
            elif custom_id in seen:
                problems[f"{where}.custom_id"] = "Component custom id cannot be duplicated"
            else:
                seen.add(custom_id)
    return problems


class Signer:
    """Discord's side of the Interactions Endpoint: a key pair, signed bodies, payloads."""

    def __init__(self, application_id: str = APPLICATION_ID) -> None:
        self._key = Ed25519PrivateKey.generate()
        self.application_id = application_id
        self._ids = itertools.count(1_300_000_000_000_000_001)

    @property
    def public_key(self) -> str:
        """The hex public key the application's config holds."""
        raw = self._key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return raw.hex()

    def headers(self, body: bytes, *, timestamp: int | None = None) -> dict[str, str]:
        """``X-Signature-Ed25519`` / ``-Timestamp`` as Discord sends them for ``body``."""
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signature = self._key.sign(stamp.encode("ascii") + body).hex()
        return {
            "X-Signature-Ed25519": signature,
            "X-Signature-Timestamp": stamp,
            "Content-Type": "application/json",
        }

    def probe(self, body: bytes) -> dict[str, str]:
        """Headers of Discord's routine probe: a fresh timestamp and a signature that is wrong."""
        good = self.headers(body)
        flipped = format(int(good["X-Signature-Ed25519"][:2], 16) ^ 1, "02x")
        return {**good, "X-Signature-Ed25519": flipped + good["X-Signature-Ed25519"][2:]}

    def ping(self) -> dict[str, Any]:
        return {"id": self._id(), "application_id": self.application_id, "type": 1, "version": 1}

    def press(
        self,
        custom_id: str,
        user: str,
        *,
        message: DiscordMessage | None = None,
        guild: bool = False,
    ) -> dict[str, Any]:
        """A MESSAGE_COMPONENT interaction: ``user`` pressed ``custom_id`` on ``message``."""
        payload = self._base(3, user, guild=guild, message=message)
        payload["data"] = {"custom_id": custom_id, "component_type": 2}
        return payload

    def command(self, name: str, user: str, *, guild: bool = False) -> dict[str, Any]:
        """An APPLICATION_COMMAND interaction: ``user`` sent the slash command ``/name``."""
        payload = self._base(2, user, guild=guild, message=None)
        payload["data"] = {"id": "1400000000000000001", "name": name, "type": 1}
        return payload

    def submit(
        self,
        custom_id: str,
        user: str,
        values: Mapping[str, str],
        *,
        message: DiscordMessage | None = None,
    ) -> dict[str, Any]:
        """A MODAL_SUBMIT interaction with one text input per ``values`` entry."""
        payload = self._base(5, user, guild=False, message=message)
        rows = [
            {"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]}
            for k, v in values.items()
        ]
        payload["data"] = {"custom_id": custom_id, "components": rows}
        return payload

    def _base(
        self, kind: int, user: str, *, guild: bool, message: DiscordMessage | None
    ) -> dict[str, Any]:
        interaction_id = self._id()
        person = {"id": user, "username": f"user{user[-4:]}", "discriminator": "0"}
        payload: dict[str, Any] = {
            "id": interaction_id,
            "application_id": self.application_id,
            "type": kind,
            "token": f"interaction-token-{interaction_id}",
            "version": 1,
            "context": 0 if guild else 1,
        }
        if guild:
            payload["member"] = {"user": person, "roles": []}
            payload["guild_id"] = "222222222222222222"
        else:
            payload["user"] = person
        if message is not None:
            payload["message"] = {"id": message.id, "channel_id": message.channel_id}
            payload["channel_id"] = message.channel_id
        return payload

    def _id(self) -> str:
        return str(next(self._ids))
