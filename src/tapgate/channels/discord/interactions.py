"""Discord interaction payloads, read after the signature check: the few fields tapgate acts on.

An interaction arrives as JSON whose signature was verified on the raw
bytes (:mod:`.signature`). This module narrows it to an :class:`Interaction`
or raises :class:`Malformed` (a 400, never a 500): ``type`` 1 (PING), 3
(MESSAGE_COMPONENT: a button), 5 (MODAL_SUBMIT), 2 (APPLICATION_COMMAND: a
slash command, its ``data.name``), anything else ``other``.
The presser is ``user.id`` in a DM and ``member.user.id`` in a server.

A modal's values are found wherever its text inputs sit: in action rows
(``components[].components[]``) or, in newer modals, inside a label's
``component``; each input is a ``custom_id`` and a string ``value``.

What may decide is stored in the webhook inbox before it is applied, as
:func:`encode` writes it (the narrowed, verified interaction without its
token), so a replay after a crash acts on exactly what the live path read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Interaction", "InteractionKind", "Malformed", "decode", "encode", "read"]

InteractionKind = Literal["ping", "component", "modal", "command", "other"]
_KINDS: dict[int, InteractionKind] = {1: "ping", 2: "command", 3: "component", 5: "modal"}
_SNOWFLAKE = re.compile(r"[0-9]{1,25}")
_CUSTOM_ID_MAX = 100
_VALUE_MAX = 4000
_DEPTH_MAX = 4
_COMMAND_MAX = 32


class Malformed(ValueError):
    """A signed body that is not an interaction tapgate can read."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Interaction:
    """One interaction, narrowed: who pressed what on which message."""

    kind: InteractionKind
    interaction_id: str
    application_id: str
    token: str = ""
    user_id: str | None = None
    custom_id: str | None = None
    values: dict[str, str] = field(default_factory=dict)
    message_id: str | None = None
    channel_id: str | None = None
    command: str | None = None
    """A slash command's name (``whoami``), lower case; ``None`` for anything else."""


def read(body: bytes) -> Interaction:
    """The interaction in a verified ``body``; raises :class:`Malformed`."""
    try:
        raw = json.loads(body.decode("utf-8"))
        # JSON escapes can spell lone surrogates, which no store can encode.
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError) as error:
        raise Malformed("not JSON") from error
    if not isinstance(raw, dict):
        raise Malformed("not an object")
    number = raw.get("type")
    if not isinstance(number, int) or isinstance(number, bool):
        raise Malformed("type: expected an integer")
    kind = _KINDS.get(number, "other")
    interaction_id = _snowflake(raw.get("id"), "id")
    application_id = _snowflake(raw.get("application_id"), "application_id")
    if kind == "ping":
        return Interaction(kind=kind, interaction_id=interaction_id, application_id=application_id)
    token = raw.get("token")
    if not isinstance(token, str) or not token or len(token) > 1000 or not token.isascii():
        raise Malformed("token: expected a string")
    data = raw.get("data")
    if kind in ("component", "modal") and not isinstance(data, dict):
        raise Malformed("data: expected an object")
    custom_id = _custom_id(data) if isinstance(data, dict) and kind != "command" else None
    message = raw.get("message")
    return Interaction(
        kind=kind,
        interaction_id=interaction_id,
        application_id=application_id,
        token=token,
        user_id=_presser(raw),
        custom_id=custom_id,
        values=_values(data.get("components"), 0) if kind == "modal" and data else {},
        message_id=_snowflake(message.get("id"), "message.id")
        if isinstance(message, dict)
        else None,
        channel_id=_optional_snowflake(raw.get("channel_id"), "channel_id"),
        command=_command(data) if kind == "command" else None,
    )


def _command(data: object) -> str:
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(name, str) or not 0 < len(name) <= _COMMAND_MAX:
        raise Malformed("data.name: expected a command name of 1-32 characters")
    return name.casefold()


def _presser(raw: dict[str, Any]) -> str:
    member = raw.get("member")
    user = member.get("user") if isinstance(member, dict) else raw.get("user")
    if not isinstance(user, dict):
        raise Malformed("user: expected user (in a DM) or member.user (in a server)")
    return _snowflake(user.get("id"), "user.id")


def _custom_id(data: dict[str, Any]) -> str:
    value = data.get("custom_id")
    if not isinstance(value, str) or not 0 < len(value) <= _CUSTOM_ID_MAX:
        raise Malformed("data.custom_id: expected 1-100 characters")
    return value


def _values(components: object, depth: int) -> dict[str, str]:
    """Every text input's ``custom_id`` → ``value`` in a modal's components."""
    if components is None:
        return {}
    if not isinstance(components, list) or depth > _DEPTH_MAX:
        raise Malformed("data.components: expected a list of components")
    found: dict[str, str] = {}
    for item in components:
        if not isinstance(item, dict):
            raise Malformed("data.components: expected objects")
        value = item.get("value")
        if isinstance(value, str) and isinstance(item.get("custom_id"), str):
            if len(value) > _VALUE_MAX:
                raise Malformed("a text input's value is longer than Discord allows")
            found[item["custom_id"]] = value
        nested = item.get("components")
        if nested is not None:
            found.update(_values(nested, depth + 1))
        inner = item.get("component")
        if isinstance(inner, dict):
            found.update(_values([inner], depth + 1))
    return found


def _snowflake(value: object, where: str) -> str:
    if not isinstance(value, str) or _SNOWFLAKE.fullmatch(value) is None:
        raise Malformed(f"{where}: expected a snowflake (a string of digits)")
    return value


def _optional_snowflake(value: object, where: str) -> str | None:
    return None if value is None else _snowflake(value, where)


def encode(interaction: Interaction) -> str:
    """``interaction`` as the inbox stores it: its fields as JSON, without the token."""
    fields = {
        "kind": interaction.kind,
        "interaction_id": interaction.interaction_id,
        "application_id": interaction.application_id,
        "user_id": interaction.user_id,
        "custom_id": interaction.custom_id,
        "values": interaction.values,
        "message_id": interaction.message_id,
        "channel_id": interaction.channel_id,
    }
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def decode(payload: str) -> Interaction | None:
    """What :func:`encode` stored; ``None`` for anything else (another version, damage)."""
    try:
        data = json.loads(payload)
        found = Interaction(**data)
    except (ValueError, TypeError):
        return None
    ok = found.kind in ("component", "modal") and isinstance(found.values, dict)
    return found if ok and isinstance(found.interaction_id, str) else None
