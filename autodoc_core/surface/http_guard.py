"""What stands in front of the HTTP server's routes: the bearer tokens, the Host and Origin rules against DNS
rebinding, and the bound on requests in flight.

The token check is the MCP SDK's own bearer middleware (401 with ``WWW-Authenticate``) over a verifier that
compares the named tokens in constant time and reads the token file again when it changes (a name taken out
is refused at once); Host and Origin are the SDK's transport security rules, with the settings made here,
applied to every route (``/health`` names the workspaces: a rebound page must not read it); the body size
is the SDK's session manager's. The bound on requests in flight (429 with ``Retry-After``), the count of
answers by status and the one middleware that applies Host and Origin to every route are our own.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import socket

from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from autodoc_core.surface.http_access_log import AccessLog, access_logger
from autodoc_core.surface.http_options import LOOPBACK_NAMES, Address, HttpOptions, SetupError, Tokens, read_token_file
from autodoc_core.surface.prometheus import Metrics

log = logging.getLogger("autodoc.mcp.http")


class NamedTokens:
    """The SDK's ``TokenVerifier`` for the named tokens; the token file is read again when it changes (a name
    removed is refused from the next request on). A file that no longer reads refuses every token, and says
    why once: a revocation must not fail open."""

    def __init__(self, tokens: Tokens) -> None:
        self._tokens = [(token.encode(), name) for token, name in tokens.by_token.items()]
        self._file = tokens.file
        self._seen = self._stamp()

    def _stamp(self) -> tuple[int, int, int] | None:
        if self._file is None:
            return None
        try:
            stat = os.stat(self._file)
        except OSError:
            return (0, 0, 0)
        return stat.st_ino, stat.st_mtime_ns, stat.st_size

    def _reload_if_changed(self) -> None:
        stamp = self._stamp()
        if stamp == self._seen:
            return
        self._seen = stamp
        try:
            tokens = read_token_file(self._file)
        except SetupError as exc:
            log.warning("%s: every token is refused until it is mended", exc)
            self._tokens = []
            return
        self._tokens = [(token.encode(), name) for token, name in tokens.by_token.items()]
        log.warning("read the token file again: %d token(s): %s", len(self._tokens),
                    ", ".join(name for _, name in self._tokens))

    def name_of(self, token: str) -> str | None:
        self._reload_if_changed()
        given = token.encode()
        found = None
        for known, name in self._tokens:  # every one compared: the time does not say which matched
            if hmac.compare_digest(given, known):
                found = name
        return found

    async def verify_token(self, token: str) -> AccessToken | None:
        name = self.name_of(token)
        if name is None:
            return None
        return AccessToken(token="", client_id=name, scopes=[])  # the token itself is kept nowhere


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


class HostAndOrigin:
    """The SDK's Host and Origin rules (421, 403) for every route, not only ``/mcp``."""

    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings) -> None:
        self.app = app
        self.security = TransportSecurityMiddleware(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self.security.validate_request(Request(scope), is_post=False)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def guards(options: HttpOptions, metrics: Metrics) -> list[Middleware]:
    """The middleware in front of every route, outermost first: the count by status, the access log, Host and
    Origin, the bearer token (which names the caller for the log)."""
    security = transport_security(options.address, options.allow_hosts, options.allow_origins)
    middleware = [Middleware(StatusCounter, metrics=metrics)]
    if options.access_log is not None:
        middleware.append(Middleware(AccessLog, logger=access_logger(options.access_log),
                                     with_queries=options.access_log_queries, max_body_bytes=options.max_body_bytes))
    middleware.append(Middleware(HostAndOrigin, settings=security))
    if options.tokens:
        middleware.append(Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(NamedTokens(options.tokens))))
    return middleware


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
