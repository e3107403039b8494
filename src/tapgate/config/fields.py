"""The field types of tapgate's YAML config, and the base of every section model.

Field types carry their own checks (non-empty names, secrets, durations, URL
schemes) and raise ``PydanticCustomError`` with a short message that
:func:`~tapgate.config.errors.config_error` puts on a YAML path.
``Section`` is the base of every section model: unknown keys are errors
(``extra="forbid"``) because a misspelt key in a security policy must fail
loudly, not be ignored, and a ``null`` value means "use the default".
:func:`parse_duration` and :func:`display_url` live here because the CLI uses
them too.
"""

from __future__ import annotations

import fnmatch
import math
import re
from typing import Annotated, Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = [
    "MAX_DURATION",
    "MIN_TOKEN_LENGTH",
    "Duration",
    "Glob",
    "HttpUrl",
    "NonEmptyStr",
    "Port",
    "PositiveInt",
    "Secret",
    "Section",
    "StoreUrl",
    "Token",
    "display_url",
    "parse_duration",
]

MIN_TOKEN_LENGTH = 16
MAX_DURATION = 366 * 86400.0

_NUMBER = r"\d+(?:\.\d+)?"
_DURATION = re.compile(
    rf"(?:(?P<d>{_NUMBER})d)?(?:(?P<h>{_NUMBER})h)?(?:(?P<m>{_NUMBER})m)?(?:(?P<s>{_NUMBER})s)?"
)
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


def _glob(value: str) -> str:
    """A tool or argument glob, compiled now so that a broken one fails the load.

    ``fnmatch`` reads an unclosed ``[`` as a literal bracket, so ``deploy_[``
    would quietly match only the text ``deploy_[``: almost always a typo. The
    docs' way to match a literal ``[`` is ``[[]``, which stays valid.
    """
    index = 0
    while index < len(value):
        if value[index] == "[":
            end = index + 1
            end += value[end : end + 1] == "!"
            end += value[end : end + 1] == "]"
            end = value.find("]", end)
            if end < 0:
                raise _custom_error(
                    "glob", f"unclosed [ at position {index + 1} (write [[] for a literal [)"
                )
            index = end
        index += 1
    try:
        re.compile(fnmatch.translate(value), re.DOTALL)
    except re.error as exc:  # e.g. a range written backwards in a newer fnmatch
        raise _custom_error("glob", f"not a valid glob: {exc}") from None
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

Glob = Annotated[str, AfterValidator(_non_empty), AfterValidator(_glob)]
"""A tool name or glob, or an argument glob (``fnmatch``: ``*``, ``?``, ``[abc]``, ``[!abc]``)."""

HttpUrl = Annotated[str, AfterValidator(_http_url)]
StoreUrl = Annotated[str, AfterValidator(_store_url)]
"""A ``sqlite:///PATH`` or ``postgresql://`` URL."""

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
