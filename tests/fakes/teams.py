"""A fake Microsoft Teams: token issuer, Bot Framework OpenID metadata and JWKS, Bot Connector.

One real aiohttp server on 127.0.0.1 plays the three Microsoft parts tapgate
talks to, each where the real one would be relative to its base URL:

- ``POST /{tenant}/oauth2/v2.0/token`` (endpoint ``token``): the Entra token
  endpoint; client credentials for the bot's app id and secret and scope
  ``https://api.botframework.com/.default``, else 400/401 like Entra;
- ``GET /v1/.well-known/openidconfiguration`` and ``GET /v1/keys``
  (``metadata``, ``jwks``): the Bot Framework's metadata and a JWKS whose keys
  carry ``endorsements``. The RSA keys are generated here; :meth:`sign`
  makes the Bot Connector's bearer token with the real claim set;
- ``POST /connector/v3/conversations/{id}/activities`` and
  ``PUT .../activities/{activityId}`` (``send``, ``update``): the Bot
  Connector at the ``serviceUrl`` the fake activities carry
  (:attr:`service_url`); it requires a token this issuer gave out (401),
  refuses a message over 100 KB (413 ``MessageSizeTooBig``) and keeps each
  card's versions (:attr:`activities`).

Activities tapgate receives are built by :meth:`press`, :meth:`installed`
and :meth:`message`; :meth:`headers` signs one (or forges it, on request).
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jwt
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.fakes._server import FakeServer, RecordedRequest

__all__ = ["APP_ID", "APP_PASSWORD", "ISSUER", "TENANT", "FakeTeams", "Posted", "oid"]

APP_ID = "a1b2c3d4-0000-4000-8000-00000000a99e"
APP_PASSWORD = "test-teams-client-secret-0123456789"
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
ISSUER = "https://api.botframework.com"
SCOPE = "https://api.botframework.com/.default"
_SIZE_LIMIT = 100 * 1024


def oid(n: int) -> str:
    """A made-up Entra object id (a GUID), distinct per ``n``."""
    return f"00000000-0000-4000-8000-{n:012d}"


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@dataclass
class Posted:
    """A card the Bot Connector holds: its conversation and every version, newest last."""

    conversation_id: str
    versions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def card(self) -> dict[str, Any]:
        """The Adaptive Card the chat shows now."""
        content: dict[str, Any] = self.versions[-1]["attachments"][0]["content"]
        return content

    @property
    def text(self) -> str:
        """Everything the current card says, as JSON text (for ``in`` checks)."""
        return json.dumps(self.card, ensure_ascii=False)


@functools.cache
def _first_key() -> rsa.RSAPrivateKey:
    """One 2048-bit key per test process for every fake's first signing key.

    Making one costs ~35 ms of CPU and fifty-odd tests start a fake. No test
    runs two fakes that must not trust each other's tokens; the tests that need
    an unknown key make their own (a forged token), and :meth:`FakeTeams.rotate`
    still makes a new one.
    """
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class FakeTeams(FakeServer):
    """Fake Entra + Bot Framework + Bot Connector (see the module docstring)."""

    endpoints = ("token", "metadata", "jwks", "send", "update")

    def __init__(self, *, endorsements: tuple[str, ...] = ("msteams",)) -> None:
        super().__init__()
        self.key: rsa.RSAPrivateKey = _first_key()
        self.kid = "tapgate-test-key-1"
        self.endorsements = list(endorsements)
        self.extra_keys: list[tuple[str, Any, list[str]]] = []
        self.tokens: set[str] = set()
        self.activities: dict[str, Posted] = {}
        self._ids = itertools.count(1)
        router = self._app.router
        router.add_post("/{tenant}/oauth2/v2.0/token", self._endpoint("token", self._token))
        router.add_get(
            "/v1/.well-known/openidconfiguration", self._endpoint("metadata", self._metadata)
        )
        router.add_get("/v1/keys", self._endpoint("jwks", self._jwks))
        base = "/connector/v3/conversations/{conversation}/activities"
        router.add_post(base, self._endpoint("send", self._send))
        router.add_put(base + "/{activity}", self._endpoint("update", self._update))

    # -- where tapgate points ----------------------------------------------------------

    @property
    def metadata_url(self) -> str:
        return f"{self.url}/v1/.well-known/openidconfiguration"

    @property
    def token_url(self) -> str:
        return f"{self.url}/{TENANT}/oauth2/v2.0/token"

    @property
    def service_url(self) -> str:
        return f"{self.url}/connector/"

    def settings(self) -> dict[str, Any]:
        """``channels.teams`` pointing at this fake."""
        return {
            "app_id": APP_ID,
            "app_password": APP_PASSWORD,
            "tenant_id": TENANT,
            "openid_metadata_url": self.metadata_url,
            "token_url": self.token_url,
            "timeout": 5,
        }

    # -- the Bot Connector's side of a request to the bot -----------------------------

    def sign(
        self,
        *,
        now: float,
        service_url: str | None = None,
        audience: str = APP_ID,
        issuer: str = ISSUER,
        lifetime: float = 3600.0,
        key: Any = None,
        kid: str | None = None,
        algorithm: str = "RS256",
    ) -> str:
        """A Bot Connector token issued at ``now`` (epoch seconds)."""
        claims = {
            "serviceurl": service_url or self.service_url,
            "serviceUrl": service_url or self.service_url,
            "iss": issuer,
            "aud": audience,
            "nbf": int(now) - 60,
            "iat": int(now) - 60,
            "exp": int(now + lifetime),
        }
        headers = {"kid": kid or self.kid}
        signing = key if key is not None else self.key
        if algorithm == "none":
            return jwt.encode(claims, "", algorithm="none", headers=headers)
        return jwt.encode(claims, signing, algorithm=algorithm, headers=headers)

    def headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def activity(
        self, kind: str, user: int, *, conversation: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        """An activity from the user with object id ``oid(user)`` in their personal chat."""
        return {
            "type": kind,
            "id": extra.pop("id", None) or f"f:{uuid.uuid4().hex}",
            "channelId": "msteams",
            "serviceUrl": self.service_url,
            "from": {"id": f"29:1user{user}", "aadObjectId": oid(user), "name": f"User {user}"},
            "recipient": {"id": f"28:{APP_ID}", "name": "tapgate"},
            "conversation": {
                "id": conversation or self.conversation_of(user),
                "conversationType": "personal",
                "tenantId": TENANT,
            },
            "channelData": {"tenant": {"id": TENANT}},
            **extra,
        }

    def installed(self, user: int) -> dict[str, Any]:
        """The app added to ``user``'s personal scope."""
        return self.activity("installationUpdate", user, action="add")

    def message(self, user: int, text: str) -> dict[str, Any]:
        return self.activity("message", user, text=text)

    def press(
        self, user: int, action: str, *, inputs: Mapping[str, str] | None = None, **extra: Any
    ) -> dict[str, Any]:
        """An ``adaptiveCard/action`` invoke: ``action`` is the button's ``tg`` string."""
        data = {"tg": action, **(inputs or {})}
        value = {"action": {"type": "Action.Execute", "verb": "tapgate", "data": data}}
        return self.activity("invoke", user, name="adaptiveCard/action", value=value, **extra)

    @staticmethod
    def conversation_of(user: int) -> str:
        return f"a:1personal-chat-{user}"

    # -- what was posted ---------------------------------------------------------------

    def cards_in(self, user: int) -> list[Posted]:
        """The cards posted in ``user``'s personal chat, oldest first."""
        chat = self.conversation_of(user)
        return [p for p in self.activities.values() if p.conversation_id == chat]

    def rotate(self) -> None:
        """Publish a new signing key (Microsoft's rotation); the old one is dropped."""
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = f"tapgate-test-key-{uuid.uuid4().hex[:6]}"

    # -- endpoints ---------------------------------------------------------------------

    async def _token(self, request: RecordedRequest) -> web.Response:
        form = request.body if isinstance(request.body, dict) else {}
        if form.get("grant_type") != "client_credentials" or form.get("scope") != SCOPE:
            return self._json({"error": "invalid_request"}, status=400)
        if form.get("client_id") != APP_ID or form.get("client_secret") != APP_PASSWORD:
            return self._json(
                {"error": "invalid_client", "error_description": "AADSTS7000215"}, status=401
            )
        token = f"bot-token-{uuid.uuid4().hex}"
        self.tokens.add(token)
        return self._json({"token_type": "Bearer", "expires_in": 3599, "access_token": token})

    async def _metadata(self, request: RecordedRequest) -> web.Response:
        del request
        return self._json(
            {
                "issuer": ISSUER,
                "authorization_endpoint": "https://invalid.botframework.com",
                "jwks_uri": f"{self.url}/v1/keys",
                "id_token_signing_alg_values_supported": ["RS256"],
            }
        )

    async def _jwks(self, request: RecordedRequest) -> web.Response:
        del request
        keys = [(self.kid, self.key, self.endorsements), *self.extra_keys]
        return self._json({"keys": [self._jwk(kid, key, ends) for kid, key, ends in keys]})

    @staticmethod
    def _jwk(kid: str, key: Any, endorsements: list[str]) -> dict[str, Any]:
        numbers = key.public_key().public_numbers()
        return {
            "kty": "RSA",
            "use": "sig",
            "kid": kid,
            "n": _b64(numbers.n),
            "e": _b64(numbers.e),
            "endorsements": endorsements,
        }

    def _authorised(self, request: RecordedRequest) -> bool:
        header = request.headers.get("authorization", "")
        return header.startswith("Bearer ") and header[7:] in self.tokens

    async def _send(self, request: RecordedRequest) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        conversation = request.path.split("/")[-2]
        ident = f"1:{next(self._ids)}"
        self.activities[ident] = Posted(conversation_id=conversation, versions=[request.body])
        return self._json({"id": ident}, status=201)

    async def _update(self, request: RecordedRequest) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        ident = request.path.split("/")[-1]
        posted = self.activities.get(ident)
        if posted is None:
            return self._json({"error": {"code": "NotFound", "message": "no such activity"}}, 404)
        posted.versions.append(request.body)
        return self._json({"id": ident})

    def _refused(self, request: RecordedRequest) -> web.Response | None:
        if not self._authorised(request):
            return self._json({"error": {"code": "Unauthorized", "message": "bad token"}}, 401)
        if request.body_kind != "json" or len(request.raw_body) > _SIZE_LIMIT:
            error = {"code": "MessageSizeTooBig", "message": "Message size too big"}
            return self._json({"error": error}, 413)
        return None

    def _fault_body(self, code: int) -> Any:
        return {"error": {"code": "ServiceError", "message": f"HTTP {code}"}}
