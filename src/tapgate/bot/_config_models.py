"""The schema of tapgate's YAML config: section models, field types, and how errors read.

Each model mirrors one YAML section key for key; unknown keys are errors
(``extra="forbid"``) because a misspelt key in a security policy must fail
loudly, not be ignored. Field types carry their own checks (non-empty names,
secrets, durations, URL schemes) and raise ``PydanticCustomError`` with a short
message. :func:`config_error` turns pydantic's errors into one ``ConfigError``
on a YAML path (``policy.rules[3].tool: expected a string``). The top-level
model, its cross-field checks and the loader live in :mod:`tapgate.bot.config`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Sequence
from typing import Annotated, Any, get_args, get_origin
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from tapgate.core.models import Action, Risk, Verdict
from tapgate.errors import ConfigError

__all__ = [
    "AgentConfig",
    "AgentPolicyConfig",
    "ApproverConfig",
    "ChannelsConfig",
    "ConsoleConfig",
    "LineConfig",
    "Loc",
    "PolicyConfig",
    "RuleConfig",
    "SandboxConfig",
    "Section",
    "ServerConfig",
    "SlackConfig",
    "StoreConfig",
    "ToolConfig",
    "config_error",
    "display_url",
    "format_path",
    "parse_duration",
]

Loc = Sequence[str | int]
"""A YAML location as pydantic reports it: keys and list indices."""

MIN_TOKEN_LENGTH = 16
MAX_DURATION = 366 * 86400.0

_NUMBER = r"\d+(?:\.\d+)?"
_DURATION = re.compile(
    rf"(?:(?P<d>{_NUMBER})d)?(?:(?P<h>{_NUMBER})h)?(?:(?P<m>{_NUMBER})m)?(?:(?P<s>{_NUMBER})s)?"
)
_PLAIN_KEY = re.compile(r"[^\s.\[\]\"']+")
_UNIT_SECONDS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION_HINT = "seconds, or a string like 90s, 10m, 1h, 1h30m, 2d"


def parse_duration(value: str | float) -> float:
    """Seconds in ``value``: a number of seconds or a string like ``90s``, ``1h30m``, ``2d``.

    Operators think in minutes and hours, the core in float seconds; this is
    the one place the two meet, so the CLI can reuse it for ``--timeout``.
    Units must appear in the order d, h, m, s. Raises ``ValueError`` for
    other text and for durations that are not finite and positive (a zero or
    negative timeout would expire a request before anyone sees it), and
    ``TypeError`` for values that are neither text nor a number.
    """
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"expected a duration ({_DURATION_HINT})")
    seconds = _parse_duration_text(value) if isinstance(value, str) else float(value)
    if not math.isfinite(seconds):
        raise ValueError("expected a finite duration")
    if seconds <= 0:
        raise ValueError("a duration must be greater than 0")
    if seconds > MAX_DURATION:
        # Beyond this a datetime overflows somewhere (every ask a 500, no delivery ever).
        raise ValueError("a duration must be at most 366 days")
    return seconds


def _parse_duration_text(value: str) -> float:
    text = value.strip()
    if re.fullmatch(_NUMBER, text):
        return float(text)
    match = _DURATION.fullmatch(text)
    if not text or match is None:
        raise ValueError(f"expected a duration ({_DURATION_HINT}), got {value!r}")
    return sum(
        float(amount) * _UNIT_SECONDS[unit]
        for unit, amount in match.groupdict().items()
        if amount is not None
    )


def _custom_error(kind: str, message: str) -> PydanticCustomError:
    # The message goes through the context so that braces in user text are never
    # read as template placeholders.
    return PydanticCustomError(kind, "{message}", {"message": message})


def _duration(value: Any) -> float:
    try:
        return parse_duration(value)
    except (TypeError, ValueError) as exc:
        raise _custom_error("duration", str(exc)) from None


def _non_empty(value: str) -> str:
    if not value.strip():
        raise _custom_error("empty", "must not be empty")
    return value


def _no_bool(value: Any) -> Any:
    # Lax mode would read YAML `true` as 1; a boolean where a number belongs is a typo.
    if isinstance(value, bool):
        raise _custom_error("int_type", "expected an integer")
    return value


def _secret_text(value: Any) -> Any:
    if isinstance(value, bytes):  # ``!!binary``: a secret is text, and short ones slip through
        raise _custom_error("string_type", "expected text")
    if isinstance(value, str) and not value.strip():
        raise _custom_error("empty", "must not be empty")
    if isinstance(value, str) and value != value.strip():
        # A secret file read into ${VAR} often ends in a newline: the platform's
        # (or the agent's) copy does not, so every signature or token would fail.
        raise _custom_error("whitespace", "must not start or end with whitespace")
    return value


def _token_text(value: Any) -> Any:
    value = _secret_text(value)
    if isinstance(value, str) and len(value) < MIN_TOKEN_LENGTH:
        raise _custom_error("too_short", f"must be at least {MIN_TOKEN_LENGTH} characters")
    return value


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _custom_error("url", "expected an http:// or https:// URL")
    return value


def _store_url(value: str) -> str:
    if value.startswith("sqlite:///") or (
        value.startswith("postgresql://") and len(value) > len("postgresql://")
    ):
        return value
    raise _custom_error("url", "expected a sqlite:///PATH or postgresql:// URL")


def display_url(url: str) -> str:
    """``url`` with its password masked, for reprs and messages; the rest exactly as written.

    Masks the user part's password and any ``?…password…=`` query value
    (asyncpg reads ``?password=``; SQLAlchemy's ``hide_password`` misses it).
    A URL too broken to split is not echoed at all.
    """
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return "(an unparsable store URL)"
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    return urlunsplit(parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:***@{hostport}"))


_QUERY_PASSWORD = re.compile(r"(?i)([?&][^=&#]*password[^=&#]*=)[^&#]*")


Duration = Annotated[float, BeforeValidator(_duration)]
"""Seconds, written in YAML as a number or as ``90s`` / ``10m`` / ``1h30m``."""

NonEmptyStr = Annotated[str, AfterValidator(_non_empty)]
"""Names, globs and ids: an empty one would match nothing or everything."""

Secret = Annotated[SecretStr, BeforeValidator(_secret_text)]
"""A credential: never shown in repr, never empty after interpolation."""

Token = Annotated[SecretStr, BeforeValidator(_token_text)]
"""An agent's bearer token: long enough that guessing it is hopeless."""

HttpUrl = Annotated[str, AfterValidator(_http_url)]
Port = Annotated[int, BeforeValidator(_no_bool), Field(ge=1, le=65535)]
PositiveInt = Annotated[int, BeforeValidator(_no_bool), Field(ge=1)]


class Section(BaseModel):
    """Base of every config model: strict about keys, frozen, quiet about inputs."""

    # Lax mode on purpose: after ${VAR} interpolation a port or a flag arrives as
    # a string ("8080", "true"); pydantic still refuses numbers where text belongs.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        # `agents:` with every entry commented out is null in YAML; read it as "default".
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {
            key: value
            for key, value in data.items()
            if value is not None or key not in fields or fields[key].is_required()
        }


_CLIENT_SLICE = 60.0  # tapgate.client.LONG_POLL (not imported: bot config loads without it)


def _room_for_client_polls(value: float) -> float:
    """``max_wait`` must admit the clients' long-poll slices, or every poll is a 400."""
    if value < _CLIENT_SLICE:
        raise ValueError(
            f"must be at least {_CLIENT_SLICE:g}s: tapgate's clients (the Python library, "
            "the Claude Code hook, tapgate run) long-poll in slices of that length"
        )
    return value


class ServerConfig(Section):
    """Where tapgate listens; ``public_url`` is how LINE / Slack reach its webhooks."""

    host: NonEmptyStr = "127.0.0.1"
    port: Port = 8080
    public_url: HttpUrl | None = None
    max_wait: Annotated[Duration, AfterValidator(_room_for_client_polls)] = 300.0
    heartbeat_interval: Duration = 5.0
    remind_after: Duration | None = None
    delivery_lease: Duration = 60.0


class StoreConfig(Section):
    """The database: a SQLite file by default, PostgreSQL for several replicas."""

    url: Annotated[str, AfterValidator(_store_url)] = "sqlite:///tapgate.db"

    def __repr_args__(self) -> Any:
        # A PostgreSQL URL may carry a password; repr shows the rest of it only.
        yield "url", display_url(self.url)


class AgentConfig(Section):
    """An agent allowed to use the HTTP API, identified by its own bearer token."""

    name: NonEmptyStr
    token: Token


class ApproverConfig(Section):
    """A person who may approve, with a user id per platform and optional groups."""

    name: NonEmptyStr
    line: NonEmptyStr | None = None
    slack: NonEmptyStr | None = None
    slack_team: NonEmptyStr | None = None
    groups: tuple[NonEmptyStr, ...] = ()


class ConsoleConfig(Section):
    """Print requests on the server's console: for trying tapgate without a chat app."""

    enabled: bool = True


class LineConfig(Section):
    """The LINE Messaging API channel that pushes requests and receives taps."""

    channel_access_token: Secret
    channel_secret: Secret
    api_base_url: HttpUrl = "https://api.line.me"
    timeout: Duration = 10.0


class SlackConfig(Section):
    """The Slack app; ``app_token`` (``xapp-``) switches to Socket Mode."""

    bot_token: Secret
    signing_secret: Secret
    app_token: Secret | None = None
    api_base_url: HttpUrl = "https://slack.com/api/"
    channel: NonEmptyStr | None = None
    team_id: NonEmptyStr | None = None
    timeout: Duration = 10.0
    pace: Duration = 1.0


class ChannelsConfig(Section):
    """The notification channels; a section that is absent is not configured."""

    console: ConsoleConfig | None = None
    line: LineConfig | None = None
    slack: SlackConfig | None = None


def _absolute_path(value: str) -> str:
    if not value.startswith("/"):
        raise _custom_error("path", "expected an absolute path")
    if any(part in (".", "..") for part in value.split("/")) or "//" in value.rstrip("/"):
        # The sandbox binds what the operator wrote: no spelling that means another place.
        raise _custom_error("path", "expected a normalised path (no '.', '..' or '//')")
    if not value.strip("/"):
        raise _custom_error("path", "'/' is the whole filesystem: name the directories instead")
    return value


def _writable_path(value: str) -> str:
    if value == ".":
        return value
    if not value.startswith("/"):
        where = 'an absolute path or "." (the directory tapgate run starts in)'
        raise _custom_error("path", f"expected {where}")
    return _absolute_path(value)


WritablePath = Annotated[str, AfterValidator(_writable_path)]
HiddenPath = Annotated[str, AfterValidator(_absolute_path)]


class SandboxConfig(Section):
    """What ``tapgate run --sandbox`` lets this tool's commands do beyond reading files.

    Everything is off unless named: no network, nothing writable but a private
    ``/tmp``. The server hands this to the client, so an agent cannot widen it.
    """

    network: bool = False
    writable: tuple[WritablePath, ...] = ()
    hidden: tuple[HiddenPath, ...] = ()


class ToolConfig(Section):
    """What the operator says about one tool or tool glob (see ``core.rules.ToolSpec``)."""

    risk: Risk = "write"
    shell: NonEmptyStr | None = None
    fingerprint: tuple[NonEmptyStr, ...] = ()
    prefix_words: PositiveInt = 2
    sandbox: SandboxConfig | None = None


class RuleConfig(Section):
    """One policy rule: tool glob, argument globs, action, and who to ask."""

    tool: NonEmptyStr
    action: Action
    args: dict[NonEmptyStr, NonEmptyStr] = Field(default_factory=dict)
    approvers: tuple[NonEmptyStr, ...] = ()
    timeout: Duration | None = None
    reason: str | None = None


class AgentPolicyConfig(Section):
    """Rules for one agent, searched before the global rules."""

    rules: tuple[RuleConfig, ...] = ()


class PolicyConfig(Section):
    """The whole policy section: defaults, tools, global and per-agent rules."""

    default_timeout: Duration = 600.0
    on_timeout: Verdict = "deny"
    default_approvers: tuple[NonEmptyStr, ...] = ()
    risk_defaults: dict[Risk, Action] = Field(default_factory=dict)
    tools: dict[NonEmptyStr, ToolConfig] = Field(default_factory=dict)
    rules: tuple[RuleConfig, ...] = ()
    agents: dict[NonEmptyStr, AgentPolicyConfig] = Field(default_factory=dict)


def format_path(loc: Loc) -> str:
    """``("policy", "rules", 3, "tool")`` → ``policy.rules[3].tool``.

    Keys that would read ambiguously (dots, brackets, spaces) are quoted:
    ``policy.tools["mcp.github.*"]``.
    """
    out = ""
    for item in loc:
        if isinstance(item, int):
            out += f"[{item}]"
        elif _PLAIN_KEY.fullmatch(item):
            out += f".{item}" if out else item
        else:
            out += f"[{json.dumps(item)}]"
    return out


_MESSAGES = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
}


def config_error(exc: ValidationError, root: type[BaseModel]) -> ConfigError:
    """The first of pydantic's errors as one ConfigError on its YAML path, counting the rest."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    loc = tuple(first["loc"])
    message = _describe(first, loc, root)
    if loc and loc[-1] == "[key]":
        loc = loc[:-1]
        message = f"invalid key: {message}"
    elif first["type"] == "missing":
        loc = loc[:-1]
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more)"
    return ConfigError(format_path(loc), message)


def _describe(error: ErrorDetails, loc: tuple[str | int, ...], root: type[BaseModel]) -> str:
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "literal_error":
        return "expected one of " + ", ".join(re.findall(r"'([^']*)'", str(ctx["expected"])))
    if kind == "missing":
        return f"missing required key {loc[-1]!r}"
    if kind == "extra_forbidden":
        return _unknown_key(loc, root)
    bound = {"greater_than_equal": ("at least", "ge"), "less_than_equal": ("at most", "le")}
    if kind in bound:
        words, name = bound[kind]
        return f"must be {words} {ctx[name]}"
    return _MESSAGES.get(kind, error["msg"])


def _unknown_key(loc: tuple[str | int, ...], root: type[BaseModel]) -> str:
    key = str(loc[-1])
    allowed = _fields_at(loc[:-1], root)
    close = difflib.get_close_matches(key, allowed, n=1)
    if close:
        return f"unknown key {key!r} (did you mean {close[0]!r}?)"
    if allowed:
        return f"unknown key {key!r} (expected one of {', '.join(allowed)})"
    return f"unknown key {key!r}"


def _fields_at(loc: Loc, root: type[BaseModel]) -> list[str]:
    """The keys the model at ``loc`` accepts, found by walking the annotations."""
    annotation: Any = root
    for item in loc:
        annotation = _unwrap_optional(annotation)
        if _is_model(annotation):
            field = annotation.model_fields.get(item) if isinstance(item, str) else None
            if field is None:
                return []
            annotation = field.annotation
        elif get_origin(annotation) in (tuple, list) and isinstance(item, int):
            annotation = get_args(annotation)[0]
        elif get_origin(annotation) is dict:
            annotation = get_args(annotation)[1]
        else:
            return []
    annotation = _unwrap_optional(annotation)
    return list(annotation.model_fields) if _is_model(annotation) else []


def _unwrap_optional(annotation: Any) -> Any:
    args = [arg for arg in get_args(annotation) if arg is not type(None)]
    return args[0] if len(args) == 1 and type(None) in get_args(annotation) else annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
