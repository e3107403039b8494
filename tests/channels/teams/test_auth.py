"""The Bot Connector token check on its own: skew, key rotation, and who fetches keys when.

Tokens are signed for real by the fake's RSA key; the metadata and JWKS are
fetched over HTTP from the fake. The webhook-level tests (test_webhook.py)
show that a refused token changes nothing; these pin the edges.
"""

from __future__ import annotations

import time

import pytest

from tapgate.channels.teams.auth import SKEW, BotAuth, Refused
from tests.fakes.teams import APP_ID, FakeTeams

NOW = 1_767_225_600.0


def auth_for(teams: FakeTeams, min_refresh: float = 60.0) -> BotAuth:
    return BotAuth(
        app_id=APP_ID, metadata_url=teams.metadata_url, now=lambda: NOW, min_refresh=min_refresh
    )


async def test_a_valid_token_names_its_service_url() -> None:
    async with FakeTeams() as teams:
        auth = auth_for(teams)
        claims = await auth.verify(f"Bearer {teams.sign(now=NOW)}")
        assert claims.service_url == teams.service_url and "msteams" in claims.endorsements
        await auth.close()


@pytest.mark.parametrize(("expired_by", "ok"), [(SKEW - 5, True), (SKEW + 5, False)])
async def test_expiry_allows_five_minutes_of_skew(expired_by: float, ok: bool) -> None:
    async with FakeTeams() as teams:
        auth = auth_for(teams)
        token = teams.sign(now=NOW - 600 - expired_by, lifetime=600)
        if ok:
            await auth.verify(f"Bearer {token}")
        else:
            with pytest.raises(Refused, match="expired"):
                await auth.verify(f"Bearer {token}")
        await auth.close()


async def test_a_token_from_the_future_is_refused() -> None:
    async with FakeTeams() as teams:
        auth = auth_for(teams)
        with pytest.raises(Refused, match="not valid yet"):
            await auth.verify(f"Bearer {teams.sign(now=NOW + SKEW + 120)}")
        await auth.close()


async def test_a_rotated_key_is_fetched_once_and_made_up_key_ids_fetch_nothing() -> None:
    async with FakeTeams() as teams:
        auth = auth_for(teams, min_refresh=0.0)
        await auth.verify(f"Bearer {teams.sign(now=NOW)}")
        teams.rotate()
        await auth.verify(f"Bearer {teams.sign(now=NOW)}")  # unknown kid: one refresh
        assert len(teams.requests_to("jwks")) == 2
        await auth.close()
        patient = auth_for(teams)  # the default: at most one refresh a minute
        await patient.verify(f"Bearer {teams.sign(now=NOW)}")
        for n in range(5):
            with pytest.raises(Refused, match="unknown signing key"):
                await patient.verify(f"Bearer {teams.sign(now=NOW, kid=f'made-up-{n}')}")
        assert len(teams.requests_to("jwks")) == 3
        await patient.close()


async def test_keys_unavailable_is_a_503_not_a_traceback() -> None:
    async with FakeTeams() as teams:
        token = teams.sign(now=NOW)
        url = teams.metadata_url
    auth = BotAuth(app_id=APP_ID, metadata_url=url, now=time.time, timeout=1.0)
    with pytest.raises(Refused) as refused:
        await auth.verify(f"Bearer {token}")
    assert refused.value.status == 503
    await auth.close()


@pytest.mark.parametrize("header", [None, "", "Basic abc", "Bearer ", "Bearer not.a.jwt"])
async def test_malformed_headers_are_401(header: str | None) -> None:
    async with FakeTeams() as teams:
        auth = auth_for(teams)
        with pytest.raises(Refused) as refused:
            await auth.verify(header)
        assert refused.value.status == 401
        assert teams.requests_to("jwks") == []  # refused before any key was looked up
        await auth.close()
