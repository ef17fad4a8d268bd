"""``autodoc mcp``: the engine's search, read and listings as Model Context Protocol tools on stdio.

The official MCP Python SDK's low-level server owns the protocol (framing, the handshake, version
negotiation, capabilities, stdout kept for protocol only); this module maps each tool to the
Engine's public methods, as ``rpc.py`` does for JSON-RPC. The low-level server rather than the
decorator API because every bad argument must come back as a tool error carrying the engine's
JSON-RPC code, and the decorator API answers type and range errors itself, without one.

The engine opens in a background thread once the server runs, so the tool list never waits for
its imports; a tool call that comes first waits for it. Like ``serve --stdio``, the engine then
embeds in the background when this process holds the writer lease.

Tool definitions are in ``mcp_tools``, text renderings in ``mcp_text``, the hits' texts within their token
budget in ``mcp_answer``; what stays here is one request's path: the engine handle, argument checks, the
handlers.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from autodoc_core import __version__
from autodoc_core.errors import (
    BUSY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    NOT_FOUND,
    UNKNOWN_WORKSPACE,
    AutodocError,
    from_sqlite,
    invalid_params,
)

if TYPE_CHECKING:
    from autodoc_core.search.answer import SearchAnswer
    from autodoc_core.service.engine import Engine
    from autodoc_core.service.scanner import Scanner

from autodoc_core.surface.mcp_answer import (
    Budget,
    FileLines,
    filling,
    hit_with_text,
    query_notes,
    shortened,
    workspace_summary,
)
from autodoc_core.surface.mcp_text import (
    render_documents,
    render_index,
    render_read,
    render_search,
    render_workspaces,
)
from autodoc_core.surface.mcp_tools import (
    INDEX_TOOL,
    INSTRUCTIONS,
    TOOLS,
)
from autodoc_core.surface.tool_arguments import checked_arguments
from autodoc_core.surface.tool_errors import MCP_NAMES, tool_error

log = logging.getLogger("autodoc.mcp")

class EngineHandle:
    """Opens the engine on first need; ``open_in_background`` starts that early in a thread."""

    def __init__(self, db: str | None, scan_seconds: float = 0.0) -> None:
        self._db = db
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.scan_seconds = scan_seconds  # 0: no periodic scan (see service.scanner)
        self.scanner: Scanner | None = None

    def get(self) -> Engine:
        with self._lock:
            if self._closed:
                raise AutodocError(INTERNAL_ERROR, "the server is shutting down")
            if self._engine is None:
                from autodoc_core.service.engine import Engine  # imports numpy: kept off the start-up path

                engine = Engine(self._db)
                engine.start_background()
                self._engine = engine
                if self.scan_seconds > 0:
                    from autodoc_core.service.scanner import Scanner

                    self.scanner = Scanner(engine, self.scan_seconds)
            return self._engine

    @property
    def opened(self) -> Engine | None:
        """The engine once it is open, without waiting for it."""
        return self._engine

    def file_changed(self) -> None:
        """A search met a file changed since it was indexed: scan now, not at the next round."""
        if self.scanner is not None:
            self.scanner.wake()

    def open_in_background(self) -> None:
        threading.Thread(target=self._open_quietly, name="autodoc-mcp-open", daemon=True).start()

    def _open_quietly(self) -> None:
        try:
            self.get()
        except AutodocError as exc:  # every tool call reports it (and retries the open)
            log.warning("cannot open the database: %s", exc.reason)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self.scanner is not None:
                self.scanner.close()
            if self._engine is not None:
                self._engine.close()


# -- arguments ---------------------------------------------------------------------------------


def _string_argument(arguments: dict[str, Any], key: str, default: str | None = None) -> str | None:
    value = arguments.get(key, default)
    if value is not None and not isinstance(value, str):
        raise invalid_params(f"'{key}' must be a string, got {value!r}", argument=key)
    return value


def _workspace(engine: Engine, arguments: dict[str, Any]) -> str:
    """The named workspace, or the only one there is."""
    name = _string_argument(arguments, "workspace")
    if name is not None:
        return name
    names = [ws["name"] for ws in engine.workspace_list()]
    if len(names) == 1:
        return names[0]
    if not names:
        raise AutodocError(UNKNOWN_WORKSPACE, f"no workspace is registered in {engine.store.path} yet (is --db the "
                           "database Neovim uses?)", db=str(engine.store.path))
    raise invalid_params(f"'workspace' is needed: this database has {len(names)} workspaces ({', '.join(names)})",
                         workspaces=names)


def _scope(engine: Engine, arguments: dict[str, Any]) -> str | list[str]:
    """What the search and related tools search: the ``workspace`` argument (a name or a list), every workspace
    when it is left out."""
    scope = arguments.get("workspace")
    if scope is None:
        if not engine.workspace_list():
            _workspace(engine, arguments)  # says which database is empty
        return "*"
    if isinstance(scope, str) or (isinstance(scope, list) and scope and all(isinstance(n, str) for n in scope)):
        return scope
    raise invalid_params(f"'workspace' must be a workspace name or a non-empty list of names, got {scope!r}",
                         argument="workspace")


def _scope_label(scope: str | list[str], answer: SearchAnswer) -> str:
    """The answer's ``workspace``: the one searched, else "*" or the names asked for."""
    searched = list(answer.workspaces or {})
    if len(searched) == 1:
        return searched[0]
    return scope if isinstance(scope, str) else ", ".join(dict.fromkeys(scope))


def _related_home(engine: Engine, scope: str | list[str], path: str | None) -> str | None:
    """The workspace of the file a related search of several workspaces starts from, for a relative path: of those
    in scope, the one whose folder holds it (the first in a list, when several do); None for an absolute path
    (the engine finds its workspace)."""
    if path is None or os.path.isabs(path):
        return None
    roots = {ws["name"]: ws["root"] for ws in engine.workspace_list()}
    names = list(roots) if scope == "*" else [n for n in ([scope] if isinstance(scope, str) else scope) if n in roots]
    if len(names) == 1:
        return names[0]  # its own error when the file is not there
    holding = [n for n in names if os.path.isfile(os.path.join(roots[n], path))]
    if len(holding) == 1 or (holding and isinstance(scope, list)):
        return holding[0]
    if not holding:
        raise AutodocError(NOT_FOUND, f"{path} does not exist in any workspace searched ({', '.join(names)})",
                           path=path)
    raise invalid_params(f"{path} is in several workspaces ({', '.join(holding)}): name the file's one in "
                         "'workspace' (first in a list)", path=path, workspaces=holding)


# -- the tools ---------------------------------------------------------------------------------

Answer = tuple[dict[str, Any], str]


class Tools:
    def __init__(self, engines: EngineHandle, allow_index: bool) -> None:
        self.engines = engines
        self.listed = [*TOOLS, INDEX_TOOL] if allow_index else list(TOOLS)
        self.handlers: dict[str, Callable[[dict[str, Any]], Answer]] = {
            "search": self.search, "related": self.related, "read": self.read, "documents": self.documents,
            "workspaces": self.workspaces,
        }
        if allow_index:
            self.handlers["index"] = self.index
        self.definitions = {tool.name: tool for tool in self.listed}

    def index_hint(self) -> str:
        """Why there is no index tool: a replica never writes (its writer's URL), else the flag that offers it."""
        engine = self.engines.opened
        if engine is not None and engine.store.replica is not None:
            from autodoc_core.store.replica import refusal

            return refusal(engine.store.replica).reason
        return "start the server with --allow-index for it"

    def run(self, name: str, arguments: dict[str, Any]) -> Answer:
        return self.handlers[name](checked_arguments(arguments, self.definitions[name]))

    def search(self, arguments: dict[str, Any]) -> Answer:
        query = _string_argument(arguments, "query")
        limit, budget = arguments["limit"], Budget(arguments["max_tokens"])
        engine = self.engines.get()
        scope = _scope(engine, arguments)
        options = {"limit": limit, "snippets": False,  # the tool sends each section's own text instead
                   **{k: arguments[k] for k in ("stages", "facets", "paths") if k in arguments}}
        answer = engine.search_query(scope, query, options)
        result = {"workspace": _scope_label(scope, answer), "query": shortened(query),
                  **self._with_texts(engine, answer, budget)}
        return result, render_search(result)

    def related(self, arguments: dict[str, Any]) -> Answer:
        path = _string_argument(arguments, "path")
        line = arguments.get("line")
        limit, budget = arguments["limit"], Budget(arguments["max_tokens"])
        engine = self.engines.get()
        scope = _scope(engine, arguments)
        options = {"limit": limit, "snippets": False, **({"line": line} if line is not None else {})}
        if not isinstance(scope, str) or scope == "*":
            home = _related_home(engine, scope, path)
            if home is not None:
                options["workspace"] = home
        answer = engine.search_related(scope, path, options)
        about = answer.related or {}
        section = about["section"]
        result = {"workspace": _scope_label(scope, answer), "path": about["path"], "section": section,
                  "query": f"related to {about['path']}" + (f" › {section['breadcrumb']}" if section else ""),
                  **self._with_texts(engine, answer, budget)}
        if "workspace" in about:
            result["source_workspace"] = about["workspace"]
        return result, render_search(result)

    def _with_texts(self, engine: Engine, answer: SearchAnswer, budget: Budget) -> dict[str, Any]:
        """A search's or related answer's hits with their section texts, and what the agent needs beside."""
        from autodoc_core.service.documents import STORED_TEXT  # the engine's modules: loaded once it is open

        searched = list(answer.workspaces or {})
        files = {name: FileLines(engine, name, [hit for hit in answer.hits if hit.workspace == name])
                 for name in searched}
        hits = [hit_with_text(rank, hit, files[hit.workspace or ""], budget) for rank, hit in enumerate(answer.hits, 1)]
        if any(hit.get("text_problem") for hit in hits):  # edited or deleted since indexing
            self.engines.file_changed()
        states = {name: part.get("semantic") for name, part in (answer.workspaces or {}).items()}
        return {"hits": hits, "workspaces": searched, "stages": answer.stages_to_wire(), "semantic": answer.semantic,
                **({"semantic_by_workspace": states} if len(set(states.values())) > 1 else {}),
                **filling(engine, answer),
                "mode_used": answer.mode_used, "max_tokens": budget.total, "text_tokens": budget.used,
                "trimmed": budget.trimmed, "notes": query_notes(answer),
                **({"text_source": STORED_TEXT} if engine.store.replica is not None else {})}

    def read(self, arguments: dict[str, Any]) -> Answer:
        path = _string_argument(arguments, "path")
        # max_tokens is at least MIN_READ_TOKENS (the schema) and long lines are cut, so a read always gives
        # some text and a next_line past it: an agent paging by next_line moves on.
        budget = Budget(arguments["max_tokens"], cut_long_lines=True)
        engine = self.engines.get()
        name = _workspace(engine, arguments)
        lines_wanted = {k: arguments[k] for k in ("line_start", "line_end") if arguments.get(k) is not None}
        answer = engine.doc_read(name, path, lines_wanted)
        lines = answer["text"].split("\n") if answer["line_end"] >= answer["line_start"] else []
        kept = budget.take(lines)
        last = answer["line_start"] + len(kept) - 1
        result = {
            "workspace": name, "path": answer["path"], "line_start": answer["line_start"],
            "line_end": last if budget.trimmed else answer["line_end"], "total_lines": answer["total_lines"],
            "text": "\n".join(kept), "trimmed": budget.trimmed, "next_line": last + 1 if budget.trimmed else None,
            "line_cut": budget.line_cut, "changed_since_indexed": answer["changed_since_indexed"],
            **({"text_source": answer["text_source"]} if "text_source" in answer else {}),
        }
        return result, render_read(result, budget.total)

    def documents(self, arguments: dict[str, Any]) -> Answer:
        query = _string_argument(arguments, "query", "")
        limit, offset = arguments["limit"], arguments["offset"]
        engine = self.engines.get()
        name = _workspace(engine, arguments)
        found = engine.doc_list(name, query, {"limit": limit + 1, "offset": offset})  # one more: are there more?
        more = len(found) > limit
        result = {"workspace": name, "documents": found[:limit], "offset": offset,
                  "next_offset": offset + limit if more else None}
        return result, render_documents(result, query)

    def workspaces(self, arguments: dict[str, Any]) -> Answer:
        engine = self.engines.get()
        spaces = [workspace_summary(engine.workspace_status(ws["name"])) for ws in engine.workspace_list()]
        result = {"workspaces": spaces}
        return result, render_workspaces(result)

    def index(self, arguments: dict[str, Any]) -> Answer:
        engine = self.engines.get()
        name = _workspace(engine, arguments)
        paths = arguments.get("paths")
        report = engine.workspace_index(name, {"paths": paths} if paths is not None else None)
        keys = ("scanned", "added", "changed", "renamed", "deleted", "unchanged", "skipped", "seconds", "semantic")
        result = {"workspace": name, **{key: report[key] for key in keys}, "problems": report.get("problems", []),
                  "not_indexed": report["not_indexed"]}
        return result, render_index(result)


# -- plain-text renderings, for clients that show only text --------------------------------------


ERROR_META = "autodoc/error"


def error_result(tool: str, exc: AutodocError, fix: str | None = None,
                 offered: Mapping[str, str] | None = None) -> types.CallToolResult:
    """An MCP tool error: the text names the problem, the code and the fix (for the tools ``offered``, by default
    every tool by its own name); ``_meta`` carries them as data. Not as structured content: clients on the
    TypeScript SDK's v1 check it against the tool's output schema even on an error (typescript-sdk#1943), and
    the agent would see that schema error instead."""
    error = tool_error(tool, exc, offered if offered is not None else MCP_NAMES, fix)
    return types.CallToolResult(content=[types.TextContent(type="text", text=error.text)], is_error=True,
                                _meta={ERROR_META: error.as_dict()})


@dataclass(frozen=True)
class CallPolicy:
    """How tool calls run. The stdio server takes the defaults; the HTTP server, shared by many clients, bounds
    each call's time and counts every call by outcome."""

    seconds: float | None = None  # a call that takes longer is answered with an error (its thread runs on)
    observe: Callable[[str, str, float], None] | None = None  # (tool, outcome, seconds) after each call


TIMEOUT_FIX = "Narrow the request (fewer hits, fewer stages) or call again; the server may be busy."


def _outcome(result: types.CallToolResult) -> str:
    if not result.is_error:
        return "ok"
    code = (result.meta or {}).get(ERROR_META, {}).get("code")
    return "internal" if code == INTERNAL_ERROR else "error"


def build_server(tools: Tools, policy: CallPolicy | None = None, open_engine: bool = True) -> Server:
    """``open_engine``: open the engine in the background when the server starts (stdio); the HTTP server opens
    it once itself, as its stateless transport runs the server, lifespan included, for every request."""
    policy = policy or CallPolicy()

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in tools.handlers:
            if policy.observe is not None:
                policy.observe("unknown", "unknown_tool", 0.0)
            hint = f" ({tools.index_hint()})" if params.name == "index" else ""
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}{hint}; tools: {', '.join(tools.handlers)}")
        started = time.monotonic()
        result = await _timed_call(params.name, params.arguments or {})
        if policy.observe is not None:
            outcome = "timeout" if result is None else _outcome(result)
            policy.observe(params.name, outcome, time.monotonic() - started)
        if result is None:
            reason = f"no answer within the server's limit of {policy.seconds:g} s a call (--request-seconds)"
            return error_result(params.name, AutodocError(BUSY, reason), TIMEOUT_FIX)
        return result

    async def _timed_call(name: str, arguments: dict[str, Any]) -> types.CallToolResult | None:
        """The call's result, or None when it ran out of time."""
        with anyio.move_on_after(policy.seconds):
            return await _call(name, arguments)
        return None

    async def _call(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            structured, text = await anyio.to_thread.run_sync(tools.run, name, arguments,
                                                              abandon_on_cancel=policy.seconds is not None)
        except AutodocError as exc:
            return error_result(name, exc)
        except Exception as exc:  # a bug (or SQLite's disk, lock or permission failure): the server keeps serving
            if (known := from_sqlite(exc)) is not None:
                return error_result(name, known)
            log.exception("tool %s failed", name)
            return error_result(name, AutodocError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=structured)

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
        if open_engine:
            tools.engines.open_in_background()
        yield {}

    return Server("autodoc", version=__version__, title="AutoDoc", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool, lifespan=lifespan)


async def _serve(server: Server) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(db: str | None, allow_index: bool = False, scan_seconds: float = 0.0) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin; with ``scan_seconds``, re-index the workspaces'
    changed files that often (and at once when a search meets one). Logs go to stderr."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="autodoc mcp: %(levelname)s %(name)s: %(message)s")
    engines = EngineHandle(db, scan_seconds)
    try:
        anyio.run(_serve, build_server(Tools(engines, allow_index)))
    except KeyboardInterrupt:
        pass
    except BaseExceptionGroup as group:  # the SDK's task group: a client gone while an answer was written
        if group.split(BrokenPipeError)[1] is not None:
            raise
        raise BrokenPipeError from None  # the CLI ends quietly, as for any closed pipe
    finally:
        engines.close()
    return 0
