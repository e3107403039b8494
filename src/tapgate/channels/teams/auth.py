"""The Bot Connector's bearer token, checked in full before a request's body is read.

Microsoft's rules for a request from the Bot Connector to a bot (its
"Authentication with the Bot Connector API" page), every one enforced here
and none of them optional::

    Authorization: Bearer <JWT>   ─ missing, not a JWT, not RS256 ──────────► 401
    key id in the metadata's JWKS ─ unknown after one refresh ──────────────► 401
    the key's endorsements        ─ no "msteams" ───────────────────────────► 403
    RS256 signature with that key ─ wrong ──────────────────────────────────► 401
    iss == https://api.botframework.com, aud == app id ─ wrong ─────────────► 401
    exp / nbf with 5 minutes' skew ─ outside ───────────────────────────────► 401
    serviceUrl claim == the activity's serviceUrl ─ (checked by the webhook,
                                      once the verified body is decoded) ───► 403

The keys come from the OpenID metadata's ``jwks_uri`` and are cached; a key
id the cache does not know refreshes it (Microsoft rotates keys), at most
once per :data:`MIN_REFRESH` so that tokens with made-up key ids cannot turn
tapgate into a fetcher of Microsoft's metadata. Failures are
:class:`Refused` (a status and a reason for one log line), never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import jwt

__all__ = [
    "ISSUER",
    "MIN_REFRESH",
    "SKEW",
    "BotAuth",
    "Claims",
    "Refused",
]

_log = logging.getLogger(__name__)

ISSUER = "https://api.botframework.com"
"""The only issuer of the Bot Connector's tokens to bots."""
SKEW = 300.0
"""Clock skew allowed on ``exp`` and ``nbf``: Microsoft's five minutes."""
MIN_REFRESH = 60.0
"""Seconds between two key refreshes caused by an unknown key id."""
MAX_AGE = 24 * 3600.0
"""Keys older than this are fetched again before use (Microsoft: "relatively stable")."""
_MAX_TOKEN = 16_384  # a Bot Connector token is ~1.5 KB; anything far larger is not one
_ALGORITHM = "RS256"


@dataclass(frozen=True, kw_only=True, slots=True)
class Refused(Exception):
    """A request that is not from the Bot Connector: ``status`` to answer, ``why`` to log."""

    status: int
    why: str

    def __str__(self) -> str:
        return f"{self.status}: {self.why}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Claims:
    """What a verified token says: the service URL it was issued for, the key's endorsements."""

    service_url: str
    endorsements: frozenset[str]


@dataclass(frozen=True, kw_only=True, slots=True)
class _Key:
    key: Any
    endorsements: frozenset[str]


class BotAuth:
    """Verifies Bot Connector tokens for one bot (``app_id``) against one metadata URL.

    ``now`` gives epoch seconds (the server's clock, so tests control expiry);
    ``timeout`` bounds each metadata or JWKS fetch. The HTTP session is made
    on first use inside the running loop and closed by :meth:`close`.
    """

    def __init__(
        self,
        *,
        app_id: str,
        metadata_url: str,
        channel: str = "msteams",
        now: Callable[[], float] = time.time,
        timeout: float = 10.0,
        min_refresh: float = MIN_REFRESH,
    ) -> None:
        if not app_id:
            raise ValueError("the bot's app id must not be empty: it is the token's audience")
        self._app_id = app_id
        self._metadata_url = metadata_url
        self._channel = channel
        self._now = now
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._min_refresh = min_refresh
        self._keys: dict[str, _Key] = {}
        self._fetched_at: float | None = None
        self._lock = asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None

    async def verify(self, authorization: str | None) -> Claims:
        """The claims of a valid ``Authorization`` header; :class:`Refused` otherwise."""
        token = _bearer(authorization)
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            raise Refused(status=401, why=f"not a JWT ({type(error).__name__})") from None
        if header.get("alg") != _ALGORITHM:
            raise Refused(status=401, why=f"algorithm {str(header.get('alg'))[:16]!r} refused")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise Refused(status=401, why="the token names no signing key")
        key = await self._key(kid)
        if self._channel not in key.endorsements:
            raise Refused(status=403, why=f"signing key not endorsed for {self._channel}")
        claims = self._decode(token, key)
        self._check_times(claims)
        service_url = claims.get("serviceUrl") or claims.get("serviceurl")
        if not isinstance(service_url, str) or not service_url:
            raise Refused(status=401, why="the token carries no serviceUrl claim")
        return Claims(service_url=service_url, endorsements=key.endorsements)

    def _decode(self, token: str, key: _Key) -> dict[str, Any]:
        try:
            decoded: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[_ALGORITHM],
                audience=self._app_id,
                issuer=ISSUER,
                # Times are checked against the server's clock (_check_times).
                options={
                    "require": ["iss", "aud", "exp"],
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.InvalidAudienceError:
            raise Refused(status=401, why="audience is not this bot's app id") from None
        except jwt.InvalidIssuerError:
            raise Refused(status=401, why="issuer is not the Bot Connector") from None
        except jwt.InvalidSignatureError:
            raise Refused(status=401, why="bad signature") from None
        except jwt.PyJWTError as error:
            raise Refused(status=401, why=f"invalid token ({type(error).__name__})") from None
        return decoded

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        now = self._now()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise Refused(status=401, why="exp is not a number")
        if now > exp + SKEW:
            raise Refused(status=401, why="token expired")
        if nbf is None:
            return
        if not isinstance(nbf, int | float) or isinstance(nbf, bool) or now < nbf - SKEW:
            raise Refused(status=401, why="token not valid yet")

    async def _key(self, kid: str) -> _Key:
        key = self._keys.get(kid) if self._age() <= MAX_AGE else None
        if key is not None:
            return key
        async with self._lock:  # one fetch for every request that found the key missing
            age = self._age()
            if age > MAX_AGE or (kid not in self._keys and age >= self._min_refresh):
                await self._refresh()
        key = self._keys.get(kid)
        if key is None:
            raise Refused(status=401, why="unknown signing key")
        return key

    def _age(self) -> float:
        """Seconds since the keys were fetched (infinite before the first fetch)."""
        return float("inf") if self._fetched_at is None else self._now() - self._fetched_at

    async def _refresh(self) -> None:
        """Fetch the metadata, then its JWKS; keep the old keys if either fails."""
        try:
            metadata = await self._get_json(self._metadata_url)
            keys = _read_jwks(await self._get_json(_jwks_uri(metadata)))
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            if not self._keys:
                raise Refused(status=503, why=f"signing keys unavailable: {error}") from None
            _log.warning("Teams signing keys could not be refreshed: %s", error)
            self._fetched_at = self._now()  # do not hammer a failing endpoint
            return
        self._keys = keys
        self._fetched_at = self._now()

    async def _get_json(self, url: str) -> Any:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        async with self._session.get(url) as response:
            if response.status != 200:
                raise ValueError(f"GET {url} answered {response.status}")
            return json.loads(await response.read())

    async def close(self) -> None:
        """Close the HTTP session used for the metadata and keys."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _bearer(authorization: str | None) -> str:
    if not authorization:
        raise Refused(status=401, why="no Authorization header")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Refused(status=401, why="not a bearer token")
    if len(token) > _MAX_TOKEN:
        raise Refused(status=401, why="token too large")
    return token.strip()


def _jwks_uri(metadata: Any) -> str:
    jwks_uri = metadata.get("jwks_uri") if isinstance(metadata, dict) else None
    if not isinstance(jwks_uri, str):
        raise ValueError("the OpenID metadata has no jwks_uri")  # noqa: TRY004 - a bad document
    return jwks_uri


def _read_jwks(document: Any) -> dict[str, _Key]:
    """The RSA keys of a JWKS document, by key id, each with its endorsements."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("the JWKS has no keys list")  # noqa: TRY004 - a bad document
    keys: dict[str, _Key] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("kid"), str):
            continue
        try:
            parsed = jwt.PyJWK(entry, algorithm=_ALGORITHM)
        except jwt.PyJWTError:
            continue  # a key of another kind: not one the Bot Connector signs with
        endorsements = entry.get("endorsements")
        named = endorsements if isinstance(endorsements, list) else []
        keys[entry["kid"]] = _Key(
            key=parsed.key, endorsements=frozenset(e for e in named if isinstance(e, str))
        )
    return keys
