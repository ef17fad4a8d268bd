"""The HTTP server's access log (``--access-log FILE``, ``-`` for stderr): one line a request, written once it
is answered:

    2026-12-06T07:12:03.118Z client=10.0.0.7:51522 token=alice path=/mcp tool=search status=200 ms=41.2

``token`` is the name the token file gives the caller's token (``-`` without one, or when it was refused),
``tool`` the MCP tool called (the MCP method, ``tools/list``, for another request; ``-`` off ``/mcp``). What
an agent searched for is its own business: ``query="..."`` is added only with ``--access-log-queries``. The
file is written through ``logging.WatchedFileHandler``, so logrotate may move it away.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import sys
import time
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOGGER_NAME = "autodoc.mcp.access"
BODY_READ_MOST = 64 * 1024  # enough for any tool call's name and query; a larger body is not parsed for them


def access_logger(where: str) -> logging.Logger:
    """The logger the lines go to: a file (reopened when logrotate moves it), or stderr for ``-``."""
    logger = logging.getLogger(LOGGER_NAME)
    logger.handlers.clear()
    handler = logging.StreamHandler(sys.stderr) if where == "-" else logging.handlers.WatchedFileHandler(where)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # not through the server's warnings' format
    return logger


class AccessLog:
    def __init__(self, app: ASGIApp, logger: logging.Logger, with_queries: bool = False,
                 max_body_bytes: int = BODY_READ_MOST) -> None:
        self.app = app
        self.logger = logger
        self.with_queries = with_queries
        self.body_most = min(max_body_bytes, BODY_READ_MOST)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        body = bytearray()
        status = 0

        async def reading() -> Message:
            message = await receive()
            if message["type"] == "http.request" and len(body) <= self.body_most:
                body.extend(message.get("body", b""))
            return message

        async def answering(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, reading, answering)
        finally:
            self.logger.info(self.line(scope, bytes(body), status, time.monotonic() - started))

    def line(self, scope: Scope, body: bytes, status: int, seconds: float) -> str:
        client = scope.get("client")
        user = scope.get("user")
        token = getattr(user, "username", None) if getattr(user, "is_authenticated", False) else None
        tool, query = called(body) if scope["path"] == "/mcp" and len(body) <= self.body_most else (None, None)
        when = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        fields = [when, f"client={client[0]}:{client[1]}" if client else "client=-", f"token={token or '-'}",
                  f"path={scope['path']}", f"tool={tool or '-'}", f"status={status or '-'}", f"ms={seconds * 1000:.1f}"]
        if self.with_queries and query is not None:
            fields.append(f"query={json.dumps(query, ensure_ascii=False)}")
        return " ".join(fields)


def called(body: bytes) -> tuple[str | None, Any]:
    """(the tool, or the MCP method; the tool's ``query`` argument) of a JSON-RPC request body; a batch or a
    body that is not JSON names nothing."""
    try:
        message = json.loads(body)
    except ValueError:
        return None, None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None, None
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if message["method"] != "tools/call" or not isinstance(params.get("name"), str):
        return message["method"], None
    arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
    return params["name"], arguments.get("query")
