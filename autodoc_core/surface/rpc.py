"""One method registry for the CLI and the JSON-RPC 2.0 stdio server.

Every incoming message is untrusted: oversized lines, malformed JSON, wrong shapes and unknown
methods are answered with JSON-RPC errors, and the server keeps going.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any

from autodoc_core.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    AutodocError,
    from_sqlite,
)
from autodoc_core.search.answer import SearchAnswer
from autodoc_core.search.stream import SearchStream
from autodoc_core.service.engine import Engine
from autodoc_core.surface.agent_tool import agent_tool
from autodoc_core.surface.wire import to_json

MAX_MESSAGE_BYTES = 8 * 1024 * 1024

METHODS: dict[str, str] = {
    "workspace.add": "workspace_add",
    "workspace.list": "workspace_list",
    "workspace.remove": "workspace_remove",
    "workspace.configure": "workspace_configure",
    "workspace.section_size": "workspace_section_size",
    "workspace.index": "workspace_index",
    "workspace.status": "workspace_status",
    "search.query": "search_query",
    "search.stream": "search",  # the same search, followed by a stream: its lexical answer first (STREAMED)
    "search.related": "search_related",
    "doc.read": "doc_read",
    "doc.list": "doc_list",
    "changes.since": "changes_since",
    "embedding.pause": "embedding_pause",
    "embedding.resume": "embedding_resume",
    "embedding.focus": "embedding_focus",
}

# Methods that are not the engine's own: functions of (engine, *params).
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "agent.tool": agent_tool,  # an MCP tool's answer from this engine (the editor's agents)
}


def resolve(engine: Engine, method: Any) -> Callable[..., Any]:
    if isinstance(method, str) and method in FUNCTIONS:
        return functools.partial(FUNCTIONS[method], engine)
    if not isinstance(method, str) or method not in METHODS:
        known = ", ".join([*METHODS, *FUNCTIONS])
        raise AutodocError(METHOD_NOT_FOUND, f"unknown method {method!r}; methods: {known}", method=str(method)[:100])
    return getattr(engine, METHODS[method])


STREAMED = "search.stream"
PARTIAL_NOTIFICATION = "search.partial"


def call(engine: Engine, method: Any, params: Any, stream: SearchStream | None = None) -> Any:
    """Run one method with positional (array) or named (object) params; ``stream`` follows a streamed
    search (its partial answers, its cancellation)."""
    function = resolve(engine, method)
    if method == STREAMED:  # the stream is the server's to give, never a param
        function = functools.partial(function, stream=stream or SearchStream())
    signature = inspect.signature(function)
    signature = signature.replace(parameters=[p for p in signature.parameters.values() if p.name != "stream"])
    if params is None:
        params = []
    try:
        if isinstance(params, list):
            bound = signature.bind(*params)
        elif isinstance(params, dict):
            bound = signature.bind(**params)
        else:
            raise TypeError("params must be an array or an object")
    except TypeError as exc:
        expected = ", ".join(signature.parameters)
        raise AutodocError(INVALID_PARAMS, f"{method}: {exc}; expected [{expected}]") from None
    result = function(*bound.args, **bound.kwargs)
    return result.to_wire() if isinstance(result, SearchAnswer) else result


def error_object(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, AutodocError):
        return exc.to_rpc()
    if (known := from_sqlite(exc)) is not None:
        return known.to_rpc()
    traceback.print_exc(file=sys.stderr)
    return AutodocError(INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}").to_rpc()


def handle_message(engine: Engine, message: Any, check_text: bool = True,
                   emit: Callable[[dict], None] | None = None) -> dict[str, Any] | None:
    """One JSON-RPC request object in, one response out (None for a notification). `check_text`: look
    for lone surrogates (the line had an escaped one; none can arrive unescaped in UTF-8). `emit` sends a
    message before the response: a ``search.stream`` request's partial answers."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or "method" not in message:
        return _response(None, error=AutodocError(INVALID_REQUEST, "expected a JSON-RPC 2.0 request object").to_rpc())
    request_id = message.get("id")
    if request_id is not None and not isinstance(request_id, str | int | float) or isinstance(request_id, bool):
        return _response(None, error=AutodocError(INVALID_REQUEST, "id must be a string, a number or null").to_rpc())
    if check_text and (bad := _lone_surrogate_in(message)) is not None:
        error = AutodocError(INVALID_REQUEST, f"{bad!r} holds a lone surrogate, which is not text; a client cut a "
                             "string between the two halves of a character (an emoji?)")
        return _response(request_id, error=error.to_rpc()) if "id" in message else None
    def partial(answer: dict) -> None:
        if emit is not None and "id" in message:
            emit({"jsonrpc": "2.0", "method": PARTIAL_NOTIFICATION, "params": {"id": request_id, "answer": answer}})

    try:
        stream = SearchStream(on_partial=partial) if message["method"] == STREAMED else None
        result = call(engine, message["method"], message.get("params"), stream)
        response = _response(request_id, result=result)
    except Exception as exc:  # every failure becomes an answer; the server keeps serving
        response = _response(request_id, error=error_object(exc))
    return response if "id" in message else None


def handle_line(engine: Engine, line: bytes, emit: Callable[[dict], None] | None = None) -> Any:
    if len(line) > MAX_MESSAGE_BYTES:
        return _response(None, error=AutodocError(
            INVALID_REQUEST, f"message of {len(line)} bytes is over the {MAX_MESSAGE_BYTES} byte limit").to_rpc())
    try:
        message = json.loads(line, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        return _response(None, error=AutodocError(PARSE_ERROR, f"invalid JSON: {exc}").to_rpc())
    check_text = _SURROGATE_ESCAPE.search(line) is not None
    if isinstance(message, list):
        if not message:
            return _response(None, error=AutodocError(INVALID_REQUEST, "empty batch").to_rpc())
        answers = [handle_message(engine, item, check_text, emit) for item in message]
        return [a for a in answers if a is not None] or None
    return handle_message(engine, message, check_text, emit)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any) -> str | None:
    """The first string (key or value) in `value` that cannot be encoded as UTF-8, or None."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return value[:100]
        return None
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else value if isinstance(value, list) else []
    return next((bad for item in items if (bad := _lone_surrogate(item)) is not None), None)


def _lone_surrogate_in(message: Any) -> str | None:
    try:
        return _lone_surrogate(message)
    except RecursionError:
        return "(a message nested too deeply to check)"


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def answer_line(answer: Any) -> bytes:
    """One answer as a line; an answer that is not JSON (a NaN in a result) becomes an internal error."""
    try:
        return to_json(answer).encode() + b"\n"
    except ValueError as exc:
        request_id = answer.get("id") if isinstance(answer, dict) else None
        error = AutodocError(INTERNAL_ERROR, f"internal error: the answer is not JSON: {exc}").to_rpc()
        return to_json(_response(request_id, error=error)).encode() + b"\n"


def _response(request_id: Any, result: Any = None, error: dict | None = None) -> dict[str, Any]:
    if error is not None:
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def serve_stdio(engine: Engine, stdin: IO[bytes], stdout: IO[bytes]) -> None:
    """One JSON message per line in, one per line out, until end of input."""
    engine.start_background()

    def emit(message: Any) -> None:
        stdout.write(answer_line(message))
        stdout.flush()

    while True:
        line = stdin.readline(MAX_MESSAGE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_MESSAGE_BYTES and not line.endswith(b"\n"):
            _discard_rest_of_line(stdin)
        elif not line.strip():
            continue
        answer = handle_line(engine, line, emit)
        if answer is not None:
            emit(answer)


def _discard_rest_of_line(stdin: IO[bytes]) -> None:
    while True:
        chunk = stdin.readline(MAX_MESSAGE_BYTES)
        if not chunk or chunk.endswith(b"\n"):
            return
