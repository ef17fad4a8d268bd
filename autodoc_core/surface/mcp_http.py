"""``autodoc mcp --http HOST:PORT``: the same MCP tools as on stdio, for many clients at once, over the MCP SDK's
Streamable HTTP transport on uvicorn.

One process serves every client: one open index, one warm encoder. It is the index's writer: it takes the
writer lease at start and keeps it while no other process asks for it, and its scanner keeps the workspaces
fresh as the editor's does (``--scan-seconds``). When another process holds the lease, it serves searches
and reads all the same, and ``/health`` says who writes.

Every route: Host and Origin checked, the access log (``http_guard.guards``). Routes: ``/mcp`` (the token,
then the bound on requests in flight, then the SDK's session manager with its body limit), ``/health`` (no
token; nothing private: no paths, no processes), ``/metrics`` (the token; Prometheus text). The transport
runs stateless with JSON answers: every tool here is one request and one answer, a restarted server needs no
client to start over, and no session state grows with the number of agents.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
import uvicorn
from mcp.server.auth.middleware.bearer_auth import RequireAuthMiddleware
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response
from starlette.types import ASGIApp

from autodoc_core import __version__
from autodoc_core.surface.http_guard import InFlightLimit, guards, transport_security
from autodoc_core.surface.http_options import Address, HttpOptions, SetupError
from autodoc_core.surface.mcp import CallPolicy, EngineHandle, Tools, build_server
from autodoc_core.surface.prometheus import CONTENT_TYPE, Metrics, Scrape
from autodoc_core.surface.replication import Replication, TeamOptions, start_replication

log = logging.getLogger("autodoc.mcp.http")

# Threads that run tool calls at once; more calls wait for one in order. Searches hold the GIL between their
# SQLite and numpy parts, so a few threads a core keep the cores busy without spreading every answer thin.
CALL_THREADS = max(4, 2 * (os.cpu_count() or 1))
STATUS_THREADS = 2  # /health and /metrics read the index on threads of their own, never behind the searches


def writer(engines: EngineHandle) -> str:
    engine = engines.opened
    holder = engine.store.lease.holder() if engine is not None else None
    if holder is None:
        return "none"
    return "this process" if holder["this_process"] else "another process"


def workspace_states(engines: EngineHandle) -> list[dict[str, Any]]:
    """Each workspace's counts, semantic state and folder state ("ok", "gone", "not a folder", "unreadable",
    "empty"); no root, no error texts (they hold paths and URLs). Cheap counts (Engine.workspace_counts): read
    at every scrape."""
    engine = engines.opened
    if engine is None:
        return []
    keys = ("name", "semantic", "documents", "sections", "embedded", "total", "indexed_at", "indexing", "folder")
    return [{key: counted[key] for key in keys} for counted in engine.workspace_counts()]


class StatusPages:
    """``/health`` and ``/metrics``."""

    def __init__(self, engines: EngineHandle, metrics: Metrics, ready: threading.Event,
                 replication: Replication | None = None) -> None:
        self.engines = engines
        self.metrics = metrics
        self.ready = ready
        self.replication = replication
        self._limiter: anyio.CapacityLimiter | None = None

    async def _read(self) -> Scrape:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(STATUS_THREADS)
        return await anyio.to_thread.run_sync(self._read_now, limiter=self._limiter)

    def _read_now(self) -> Scrape:
        replication = self.replication.status() if self.replication is not None else None
        return Scrape(workspace_states(self.engines), writer(self.engines), self.ready.is_set(), replication)

    async def health(self, request: Request) -> Response:
        scrape = await self._read()
        body = {"ready": scrape.ready, "version": __version__, "writer": scrape.writer,
                "workspaces": scrape.workspaces,
                **({"role": scrape.replication["role"], "replication": scrape.replication} if scrape.replication
                   else {})}
        return JSONResponse(body, status_code=200 if scrape.ready else 503)

    async def prometheus(self, request: Request) -> Response:
        return Response(self.metrics.render(await self._read()), media_type=CONTENT_TYPE)


def build_app(tools: Tools, options: HttpOptions, metrics: Metrics, ready: threading.Event,
              on_listening: Any = None, replication: Replication | None = None) -> Starlette:
    # The engine is opened once, by open_writer: not by the SDK's lifespan, which a stateless server enters
    # for every request.
    server = build_server(tools, CallPolicy(seconds=options.request_seconds, observe=metrics.observe_call),
                          open_engine=False)
    manager = StreamableHTTPSessionManager(
        app=server, json_response=True, stateless=True, max_request_body_size=options.max_body_bytes,
        security_settings=transport_security(options.address, options.allow_hosts, options.allow_origins))
    pages = StatusPages(tools.engines, metrics, ready, replication)

    def guarded(app: ASGIApp) -> ASGIApp:
        return RequireAuthMiddleware(app, required_scopes=[]) if options.tokens else app

    mcp_app = InFlightLimit(StreamableHTTPASGIApp(manager), options.max_in_flight, metrics)
    routes = [Route("/mcp", endpoint=guarded(mcp_app)),
              Route("/health", endpoint=pages.health, methods=["GET"]),
              Route("/metrics", endpoint=guarded(request_response(pages.prometheus)) if options.tokens
                    else pages.prometheus, methods=["GET"])]
    middleware = guards(options, metrics)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = CALL_THREADS
        async with manager.run():
            if on_listening is not None:
                on_listening()
            yield

    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


def open_writer(engines: EngineHandle, ready: threading.Event) -> None:
    """Open the index, warm the encoder, and take the writer lease for as long as nobody else asks for it; then
    the server is ready."""
    try:
        engine = engines.get()
    except Exception as exc:  # said here; every tool call reports it (and retries the open)
        log.warning("cannot open the database: %s", getattr(exc, "reason", exc))
        return
    lease = engine.store.lease
    if engine.store.replica is not None:  # a replica never writes: nothing to take
        ready.set()
        return
    lease.idle_release_seconds = math.inf  # hand over only when another process asks
    if not lease.try_acquire():
        holder = lease.holder() or {}
        log.warning("another process (pid %s on %s) writes this index: this server serves searches and reads, "
                    "and takes over the writing when that process lets go", holder.get("pid"), holder.get("host"))
    ready.set()


def listening_socket(address: Address, for_workers: bool = False) -> socket.socket:
    """The server's socket. ``for_workers``: bound with SO_REUSEPORT but not listening, so the port is taken (a
    port 0 resolved) and each worker listens on it with a socket of its own (``worker_socket``)."""
    try:
        family, kind, proto, _, where = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM,
                                                           flags=socket.AI_NUMERICSERV)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if for_workers:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(where)
        if not for_workers:
            sock.listen(2048)
    except OSError as exc:
        raise SetupError(f"cannot listen on {address.url_host}:{address.port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def worker_socket(inherited: int) -> socket.socket:
    """A worker's own listening socket on the port its parent holds (SO_REUSEPORT). One socket shared by every
    worker would let whichever wakes first accept a whole burst of connections, and a client keeps its
    connection: measured with 32 clients, one worker then served all 32 and two workers no more than one. With a
    socket each, the kernel spreads new connections over the workers."""
    held = socket.socket(fileno=inherited)
    try:
        own = socket.socket(held.family, socket.SOCK_STREAM)
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        own.bind(held.getsockname())
        own.listen(2048)
        return own
    finally:
        held.close()  # this process's copy; the parent keeps the port


def serve_http(db: str | None, options: HttpOptions, allow_index: bool = False, scan_seconds: float = 0.0,
               team: TeamOptions | None = None, argv: list[str] | None = None) -> int:
    """Serve MCP on HTTP until SIGINT or SIGTERM. The first line on stderr once it answers:
    ``autodoc mcp: listening on http://HOST:PORT/mcp``. ``team``: replication and workers (doc/team.md);
    ``argv``: the command line, which each of ``--workers`` runs again."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="autodoc mcp: %(levelname)s %(name)s: %(message)s")
    team = team or TeamOptions()
    from autodoc_core.store.database import resolve_db_path

    replication = start_replication(resolve_db_path(db).path, team)
    try:
        if team.worker:
            sock = worker_socket(team.worker_socket)
        else:
            sock = listening_socket(options.address, for_workers=team.workers > 1)
        if team.workers > 1 and not team.worker:
            from autodoc_core.surface.workers import run_workers

            return run_workers(argv or [], sock, team.workers)
        replica = team.replica_of is not None
        return _serve(db, sock, options, allow_index and not replica, 0.0 if replica else scan_seconds, replication)
    finally:
        if replication is not None and not team.worker:
            replication.stop()


def _serve(db: str | None, sock: socket.socket, options: HttpOptions, allow_index: bool, scan_seconds: float,
           replication: Replication | None) -> int:
    host, port = sock.getsockname()[:2]
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
    engines = EngineHandle(db, scan_seconds)

    def on_listening() -> None:
        token = "a bearer token required" if options.tokens else "no token: loopback only"
        print(f"autodoc mcp: listening on {url} ({token})", file=sys.stderr, flush=True)

    ready = threading.Event()
    app = build_app(Tools(engines, allow_index), options, Metrics(), ready, on_listening, replication)
    # The open runs beside the server: /health answers "not ready" meanwhile.
    threading.Thread(target=open_writer, args=(engines, ready), name="autodoc-mcp-open", daemon=True).start()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5,
                            server_header=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        engines.close()
        sock.close()
    return 0
