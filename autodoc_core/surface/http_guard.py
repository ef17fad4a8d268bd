"""What stands in front of the MCP endpoint on HTTP: where the server may listen, the bearer token, the
Host and Origin rules against DNS rebinding, and the bound on requests in flight.

The token check is the MCP SDK's own bearer middleware (401 with ``WWW-Authenticate``) over a verifier that
compares one shared token in constant time; Host and Origin are checked by the SDK's transport security
with the settings made here; the body size by the SDK's session manager. Only the bound on requests in flight
(429 with ``Retry-After``) and the count of answers by status are middleware of our own.
"""

from __future__ import annotations

import hmac
import json
import socket

from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from autodoc_core.surface.http_options import LOOPBACK_NAMES, Address
from autodoc_core.surface.prometheus import Metrics


class StaticToken:
    """The SDK's ``TokenVerifier`` for one shared token."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token="", client_id="autodoc", scopes=[])  # the token itself is kept nowhere
        return None


def transport_security(address: Address, allow_hosts: list[str], allow_origins: list[str]) -> \
        TransportSecuritySettings:
    """Requests must name this server in Host (a page on a rebound DNS name names its own), and a browser's
    Origin must be this server or one given with --allow-origin. Clients that are not browsers send no Origin."""
    names = [*LOOPBACK_NAMES]
    if not address.loopback:
        names += [address.url_host, socket.gethostname(), socket.getfqdn()]
    names += allow_hosts
    hosts = sorted({f"{name}:*" for name in names} | set(names))
    origins = sorted({f"{scheme}://{name}:*" for name in names for scheme in ("http", "https")} | set(allow_origins))
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


class InFlightLimit:
    """At most ``bound`` MCP requests (POSTs) at once; one more is answered 429 with Retry-After at once.
    A client's long-lived GET stream is not a request in flight and is not counted."""

    RETRY_AFTER_SECONDS = 1

    def __init__(self, app: ASGIApp, bound: int, metrics: Metrics) -> None:
        self.app = app
        self.bound = bound
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self.metrics.in_flight >= self.bound:
            await self._refuse(send)
            return
        self.metrics.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.metrics.in_flight -= 1

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
            "code": -32000, "message": f"the server is serving {self.bound} requests already (--max-in-flight); "
                                       f"retry in {self.RETRY_AFTER_SECONDS} s"}}).encode()
        await send({"type": "http.response.start", "status": 429, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"retry-after", str(self.RETRY_AFTER_SECONDS).encode())]})
        await send({"type": "http.response.body", "body": body})


class StatusCounter:
    """Counts every answer by HTTP status, the refusals of the layers inside included."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def counting(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.metrics.observe_response(message["status"])
            await send(message)

        await self.app(scope, receive, counting)
