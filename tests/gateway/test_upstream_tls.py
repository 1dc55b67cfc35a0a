"""Engines behind TLS with a private CA, a certificate for a name the endpoint URL does not hold, and client
certificates required (mTLS): the pool's `tls` settings serve the relay and the health checks alike."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.conftest import GatewayServer, free_port


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _certificates(d: Path) -> dict[str, Path]:
    """A CA, an engine certificate for engine.test (not 127.0.0.1), a client certificate for the gateway."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=specgate test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
             "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"))  # fmt: skip
    for name, ext in (("engine", "subjectAltName=DNS:engine.test"), ("client", "extendedKeyUsage=clientAuth")):
        (d / f"{name}.ext").write_text(ext + "\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}.test",
                 "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"))  # fmt: skip
        ca = ["-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "1"]
        _openssl("x509", "-req", "-in", str(d / f"{name}.csr"), *ca,
                 "-extfile", str(d / f"{name}.ext"), "-out", str(d / f"{name}.pem"))  # fmt: skip
    return {n: d / n for n in ("ca.pem", "engine.pem", "engine.key", "client.pem", "client.key")}


class TlsEngine:
    """An OpenAI-shaped upstream over TLS that requires a client certificate (not an engine: fixed answers)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.hits = 0

        async def health(request: Request) -> Response:
            return Response(status_code=200)

        async def completion(request: Request) -> Response:
            self.hits += 1
            return JSONResponse({"id": "x", "object": "text_completion", "choices": [{"index": 0, "text": "ok"}]})

        app = Starlette(routes=[Route("/health", health), Route("/v1/completions", completion, methods=["POST"])])
        self.port = free_port()
        config = uvicorn.Config(
            app,
            host="127.0.0.1",
            port=self.port,
            log_config=None,
            ssl_certfile=str(files["engine.pem"]),
            ssl_keyfile=str(files["engine.key"]),
            ssl_ca_certs=str(files["ca.pem"]),
            ssl_cert_reqs=ssl.CERT_REQUIRED,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the TLS upstream did not start"
            time.sleep(0.01)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def tls_engine(tmp_path: Path) -> Iterator[tuple[TlsEngine, dict[str, Path]]]:
    files = _certificates(tmp_path)
    engine = TlsEngine(files)
    yield engine, files
    engine.close()


def _pool(url: str, tls: dict[str, object]) -> dict[str, object]:
    return {"name": "tls", "model": "m", "endpoints": [url], "tls": tls}


def _completion(gw: GatewayServer) -> httpx.Response:
    return httpx.post(f"{gw.url}/v1/completions", json={"model": "m", "prompt": "hi", "max_tokens": 1}, timeout=10)


def test_private_ca_server_name_and_client_certificate(
    tls_engine: tuple[TlsEngine, dict[str, Path]], start_gateway: Callable[..., GatewayServer]
) -> None:
    engine, f = tls_engine
    tls = {
        "ca_file": str(f["ca.pem"]),
        "server_name": "engine.test",
        "cert_file": str(f["client.pem"]),
        "key_file": str(f["client.key"]),
    }
    gw = start_gateway([_pool(engine.url, tls)])
    (ep,) = gw.gateway.pools.endpoints()
    assert ep.healthy is True, ep.last_error  # the health check used the same settings as the relay
    r = _completion(gw)
    assert r.status_code == 200 and r.json()["choices"][0]["text"] == "ok" and engine.hits == 1


@pytest.mark.parametrize(
    ("leave_out", "reason"),
    [
        ("server_name", "IP address mismatch"),
        ("ca_file", "self-signed certificate in certificate chain"),
        # TLS 1.3 refuses a missing client certificate after the handshake; asyncio reports the alert as a close.
        ("cert_file", "closed the connection"),
    ],
)
def test_each_missing_setting_fails_with_its_reason(
    leave_out: str,
    reason: str,
    tls_engine: tuple[TlsEngine, dict[str, Path]],
    start_gateway: Callable[..., GatewayServer],
) -> None:
    """The health checks and the relay agree (the endpoint is down for both), and the relay's error names the TLS
    reason, not only an exception's type."""
    from specgate.backends.upstream_http import UpstreamClient, UpstreamFailure

    engine, f = tls_engine
    tls: dict[str, object] = {
        "ca_file": str(f["ca.pem"]),
        "server_name": "engine.test",
        "cert_file": str(f["client.pem"]),
        "key_file": str(f["client.key"]),
    }
    tls.pop(leave_out)
    if leave_out == "cert_file":
        tls.pop("key_file")
    gw = start_gateway([_pool(engine.url, tls)])
    (ep,) = gw.gateway.pools.endpoints()
    assert ep.healthy is False
    assert _completion(gw).status_code == 503 and engine.hits == 0
    pool = gw.gateway.pools.pools[0]

    async def relay_error() -> str:
        client = UpstreamClient()
        try:
            response = await client.post(
                engine.url, "/v1/completions", b"{}", {}, connect_s=5, head_s=5,
                ssl_context=pool.ssl_context, server_name=pool.config.tls.server_name,
            )  # fmt: skip
            response.close()
        except UpstreamFailure as exc:
            return str(exc)
        finally:
            client.close()
        return "answered"

    message = asyncio.run(relay_error())
    assert reason.lower() in message.lower(), message
