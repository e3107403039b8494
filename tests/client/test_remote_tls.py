"""RemoteGate over https: the certificate and host name are verified, and the trust store's
variables still count although the TLS context is built once per process."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from tapgate.client import ClientError, RemoteGate, SyncRemoteGate
from tapgate.client._remote import _tls_context
from tapgate.gate.models import ToolCall
from tests.client.test_client import state
from tests.server.test_api import CI

CALL = ToolCall(tool="read_file", arguments={"path": "README.md"})


@pytest.fixture
async def https_port(certificate: tuple[str, str]) -> AsyncIterator[int]:
    """A TLS server for ``localhost`` that allows every call it is asked about."""

    async def allow(_: web.Request) -> web.Response:
        return web.json_response(state("allow", id=None, status="allowed", source="policy"))

    app = web.Application()
    app.router.add_post("/v1/tool-calls", allow)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    yield int(runner.addresses[0][1])
    await runner.cleanup()


def gate(host: str, port: int) -> RemoteGate:
    return RemoteGate(f"https://{host}:{port}", CI, retries=0, backoff=0, retry_for=0)


async def test_an_untrusted_certificate_is_refused_and_a_trusted_one_answers(
    https_port: int, certificate: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(ClientError) as untrusted:  # self-signed, not in certifi's bundle
        await gate("localhost", https_port).check(CALL)
    assert untrusted.value.code == "unreachable"
    assert "CERTIFICATE_VERIFY_FAILED" in str(untrusted.value)

    monkeypatch.setenv("SSL_CERT_FILE", certificate[0])  # now the trust store holds it
    assert (await gate("localhost", https_port).check(CALL)).allowed
    async with gate("localhost", https_port) as pooled:
        assert (await pooled.check(CALL)).allowed
    with SyncRemoteGate(f"https://localhost:{https_port}", CI, retries=0, retry_for=0) as sync:
        assert (await asyncio.to_thread(sync.check, CALL)).allowed  # the server is on this loop

    with pytest.raises(ClientError) as wrong_name:  # trusted, but not the name asked for
        await gate("127.0.0.1", https_port).check(CALL)
    assert "CERTIFICATE_VERIFY_FAILED" in str(wrong_name.value)


def test_the_context_is_built_once_per_trust_store_and_verifies(
    certificate: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    default = _tls_context()
    assert _tls_context() is default
    assert default.verify_mode == ssl.CERT_REQUIRED and default.check_hostname
    monkeypatch.setenv("SSL_CERT_FILE", certificate[0])
    assert _tls_context() is not default
