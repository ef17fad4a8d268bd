"""``autodoc mcp``: the engine's search, read and listings as Model Context Protocol tools on stdio.

The official MCP Python SDK's low-level server owns the protocol (framing, the handshake, version
negotiation, capabilities, stdout kept for protocol only); this module maps each tool to the
Engine's public methods, as ``rpc.py`` does for JSON-RPC. The low-level server rather than the
decorator API because every bad argument must come back as a tool error carrying the engine's
JSON-RPC code, and the decorator API answers type and range errors itself, without one.

The engine opens in a background thread once the server runs, so the tool list never waits for
its imports; a tool call that comes first waits for it. Like ``serve --stdio``, the engine then
embeds in the background when this process holds the writer lease.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
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
    CODE_NAMES,
    EMBED_FAILED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    IO_ERROR,
    NOT_FOUND,
    OUTSIDE_ROOT,
    SCHEMA_TOO_NEW,
    SWITCHING,
    UNKNOWN_WORKSPACE,
    UNSUPPORTED,
    AutodocError,
    invalid_params,
)

if TYPE_CHECKING:
    from autodoc_core.service.engine import Engine

log = logging.getLogger("autodoc.mcp")

DEFAULT_LIMIT, MAX_LIMIT = 5, 50
DEFAULT_SEARCH_TOKENS = 2000
DEFAULT_READ_TOKENS = 8000
MAX_TOKENS = 200_000
DEFAULT_DOCUMENTS, MAX_DOCUMENTS = 20, 200

FIXES = {
    UNKNOWN_WORKSPACE: "Call the workspaces tool for the names; a new folder is added once from a shell: "
                       "autodoc --call workspace.add '[\"NAME\", \"/path/to/folder\"]'.",
    OUTSIDE_ROOT: "Give the path relative to the workspace root, as search and documents return it "
                  "(no leading /, no ..).",
    NOT_FOUND: "Call documents to find the file's path.",
    INVALID_PARAMS: "Correct that argument and call again; the tool's input schema lists every argument.",
    UNSUPPORTED: "Leave stages out (or include \"lexical\") to search by words until an embedding model is "
                 "configured and filled.",
    SWITCHING: "Leave stages out (or include \"lexical\") to search by words meanwhile; the workspaces tool "
               "shows the embedding's progress.",
    EMBED_FAILED: "Include \"lexical\" in stages; the workspaces tool shows the embedder's last error.",
    BUSY: "Another process is writing the index; call again in a few seconds.",
    SCHEMA_TOO_NEW: "Upgrade autodoc, or start the server with --db pointing at another file.",
    IO_ERROR: "Check the --db path and its folder's permissions, then restart the server.",
    INTERNAL_ERROR: "This is a bug in AutoDoc; the server's stderr has the traceback.",
}


# -- tool definitions: what an agent reads ----------------------------------------------------


def _object(properties: dict[str, Any], required: list[str] | None = None, closed: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if closed:
        schema["additionalProperties"] = False
    return schema


def _integer(description: str, low: int, high: int, default: int | None = None) -> dict[str, Any]:
    schema = {"type": "integer", "minimum": low, "maximum": high, "description": description}
    return schema if default is None else {**schema, "default": default}


WORKSPACE_ARG = {"type": "string", "description": "Workspace name (see the workspaces tool); optional when "
                                                  "there is only one."}
STATE = {"type": "string", "enum": ["ready", "partial", "switching", "off"],
         "description": "ready: every section has a vector; partial: embedding is still filling (semantic "
                        "covers only part); switching: a new model is filling and searches answer by words; "
                        "off: no embedding model."}
STRINGS = {"type": "array", "items": {"type": "string"}}

SEARCH_DESCRIPTION = """\
Search a Markdown knowledge base; each hit is the section that matched, with its own text, path, \
breadcrumb and line span (cite it as path:line_start-line_end), so one call usually answers.
Query syntax: plain words (stemmed; all must match, else any); "an exact phrase"; a trailing prefix* \
(migrat*); facets filter by front matter: field:value keeps, -field:value excludes, tag:name; \
identifiers (Foo.bar, --flag, -32069) also hit a symbol index.
Stages: lexical = words (BM25), semantic = meaning (embeddings; finds paraphrases), rerank = a \
cross-encoder re-sorts the top hits. Leave stages out to run every stage available; the answer says \
which ran, which were skipped and why, and `semantic` (partial/switching/off means words-only or \
partly words-only results).
Section texts share max_tokens (cut at line ends); a hit with text_complete false can be read in full \
with the read tool."""

READ_DESCRIPTION = """\
Read a Markdown file of a workspace, or a line range of it (1-based, inclusive), e.g. a search hit's \
line_start..line_end or the lines around it. Paths are relative to the workspace root, as search and \
documents return them; nothing outside the root can be read. Long texts are cut at a line end at \
max_tokens; the answer's next_line says where to continue."""

DOCUMENTS_DESCRIPTION = """\
Find documents by title, alias or path (case-insensitive substring; exact title or alias first). \
An empty query lists the workspace's documents in path order."""

WORKSPACES_DESCRIPTION = """\
List the knowledge bases this server searches: name, root folder, document and section counts, when \
last indexed, and the semantic state with embedding progress (embedded of total sections)."""

INDEX_DESCRIPTION = """\
Re-index a workspace (or only the given relative paths) after files changed on disk: returns counts \
of added, changed, renamed and deleted files. Embedding the new sections continues in the background."""

HIT = _object({
    "rank": {"type": "integer"},
    "path": {"type": "string", "description": "relative to the workspace root"},
    "title": {"type": "string"},
    "breadcrumb": {"type": "string", "description": "the headings down to this section"},
    "kind": {"type": "string", "description": "section, abstract, or document for facet-only queries"},
    "line_start": {"type": "integer"},
    "line_end": {"type": "integer"},
    "relevance": {"type": "number", "description": "0..1; 1 is first in every stage that ran"},
    "via": {**STRINGS, "description": "the retrievers that found it: lexical, semantic, symbol, rank, facet"},
    "superseded_by": {"type": ["string", "null"]},
    "text": {"type": "string", "description": "the section's lines line_start..text_line_end"},
    "text_line_end": {"type": "integer"},
    "text_complete": {"type": "boolean"},
    "text_problem": {"type": "string", "description": "why the text could not be read, when it could not"},
}, ["path", "breadcrumb", "line_start", "line_end", "relevance", "via", "text", "text_complete"], closed=False)

SEARCH_OUTPUT = _object({
    "workspace": {"type": "string"},
    "query": {"type": "string"},
    "hits": {"type": "array", "items": HIT},
    "stages": _object({"requested": STRINGS, "performed": STRINGS,
                       "skipped": {"type": "object", "additionalProperties": {"type": "string"}}},
                      ["requested", "performed", "skipped"], closed=False),
    "semantic": STATE,
    "mode_used": {"type": "string"},
    "max_tokens": {"type": "integer"},
    "text_tokens": {"type": "integer", "description": "estimated tokens of all hit texts"},
    "trimmed": {"type": "boolean", "description": "true when some hit text was cut to fit max_tokens"},
}, ["workspace", "hits", "stages", "semantic", "trimmed"], closed=False)

READ_OUTPUT = _object({
    "workspace": {"type": "string"},
    "path": {"type": "string"},
    "line_start": {"type": "integer"},
    "line_end": {"type": "integer", "description": "the last line in text"},
    "total_lines": {"type": "integer"},
    "text": {"type": "string"},
    "trimmed": {"type": "boolean"},
    "next_line": {"type": ["integer", "null"], "description": "where to continue when trimmed"},
}, ["path", "line_start", "line_end", "total_lines", "text", "trimmed"], closed=False)

DOCUMENTS_OUTPUT = _object({
    "workspace": {"type": "string"},
    "documents": {"type": "array", "items": _object({
        "path": {"type": "string"}, "title": {"type": "string"}, "aliases": STRINGS,
        "line_count": {"type": "integer"}}, ["path", "title"], closed=False)},
}, ["workspace", "documents"], closed=False)

EMBEDDING = {"type": ["object", "null"], "properties": {
    "provider": {"type": "string"}, "model": {"type": "string"}, "embedded": {"type": "integer"},
    "total": {"type": "integer"}, "rate": {"type": ["number", "null"]}, "eta_seconds": {"type": ["number", "null"]},
    "error": {"type": ["string", "null"]}}}

WORKSPACES_OUTPUT = _object({
    "workspaces": {"type": "array", "items": _object({
        "name": {"type": "string"}, "root": {"type": "string"}, "documents": {"type": "integer"},
        "chunks": {"type": "integer"}, "indexed_at": {"type": ["number", "null"]}, "semantic": STATE,
        "embedding": EMBEDDING, "problems": {"type": "integer"}},
        ["name", "root", "documents", "chunks", "semantic"], closed=False)},
}, ["workspaces"], closed=False)

INDEX_OUTPUT = _object({
    "workspace": {"type": "string"}, "scanned": {"type": "integer"}, "added": {"type": "integer"},
    "changed": {"type": "integer"}, "renamed": {"type": "integer"}, "deleted": {"type": "integer"},
    "unchanged": {"type": "integer"}, "skipped": {"type": "integer"}, "seconds": {"type": "number"},
    "semantic": STATE,
}, ["workspace", "semantic"], closed=False)

READ_ONLY = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)

TOOLS = [
    types.Tool(
        name="search", title="Search the knowledge base", description=SEARCH_DESCRIPTION,
        input_schema=_object({
            "query": {"type": "string", "description": "words, \"phrases\", prefix*, field:value facets"},
            "workspace": WORKSPACE_ARG,
            "limit": _integer("hits to return", 1, MAX_LIMIT, DEFAULT_LIMIT),
            "stages": {"type": "array", "items": {"type": "string", "enum": ["lexical", "semantic", "rerank"]},
                       "description": "which stages to run (default: all available); include lexical or "
                                      "semantic"},
            "facets": {"type": "object", "description": "front-matter filters {\"field\": value or [values]}; "
                                                        "fields must be declared in the workspace's "
                                                        "_schema/frontmatter.yaml"},
            "paths": {**STRINGS, "description": "folder prefixes to search in, e.g. [\"adr\", \"design/api\"]"},
            "max_tokens": _integer("token budget for all hit texts together", 0, MAX_TOKENS,
                                   DEFAULT_SEARCH_TOKENS),
        }, ["query"]),
        output_schema=SEARCH_OUTPUT, annotations=READ_ONLY),
    types.Tool(
        name="read", title="Read a document", description=READ_DESCRIPTION,
        input_schema=_object({
            "path": {"type": "string", "description": "relative to the workspace root, e.g. adr/0002-store.md"},
            "workspace": WORKSPACE_ARG,
            "line_start": {"type": "integer", "minimum": 1, "description": "first line (default 1)"},
            "line_end": {"type": "integer", "minimum": 1, "description": "last line (default: the end)"},
            "max_tokens": _integer("token budget for the text", 0, MAX_TOKENS, DEFAULT_READ_TOKENS),
        }, ["path"]),
        output_schema=READ_OUTPUT, annotations=READ_ONLY),
    types.Tool(
        name="documents", title="Find documents", description=DOCUMENTS_DESCRIPTION,
        input_schema=_object({
            "query": {"type": "string", "description": "part of a title, alias or path; empty lists all"},
            "workspace": WORKSPACE_ARG,
            "limit": _integer("documents to return", 1, MAX_DOCUMENTS, DEFAULT_DOCUMENTS),
        }),
        output_schema=DOCUMENTS_OUTPUT, annotations=READ_ONLY),
    types.Tool(
        name="workspaces", title="List workspaces", description=WORKSPACES_DESCRIPTION,
        input_schema=_object({}), output_schema=WORKSPACES_OUTPUT, annotations=READ_ONLY),
]

INDEX_TOOL = types.Tool(
    name="index", title="Re-index a workspace", description=INDEX_DESCRIPTION,
    input_schema=_object({
        "workspace": WORKSPACE_ARG,
        "paths": {**STRINGS, "description": "only these files, relative to the root (default: the whole folder)"},
    }),
    output_schema=INDEX_OUTPUT,
    annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                      open_world_hint=False))

INSTRUCTIONS = (
    "AutoDoc searches the user's Markdown knowledge bases (design notes, ADRs, references). Start with "
    "search: its hits carry the matching sections' text with path and line span; cite path:line_start-line_end. "
    "Use read for more context around a hit, documents to find a file by title, workspaces for what is indexed."
)


# -- the engine, opened off the start-up path -------------------------------------------------


class EngineHandle:
    """Opens the engine on first need; ``open_in_background`` starts that early in a thread."""

    def __init__(self, db: str | None) -> None:
        self._db = db
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._closed = False

    def get(self) -> Engine:
        with self._lock:
            if self._closed:
                raise AutodocError(INTERNAL_ERROR, "the server is shutting down")
            if self._engine is None:
                from autodoc_core.service.engine import Engine  # imports numpy: kept off the start-up path

                engine = Engine(self._db)
                engine.start_background()
                self._engine = engine
            return self._engine

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
            if self._engine is not None:
                self._engine.close()


# -- arguments ---------------------------------------------------------------------------------


def _checked(arguments: dict[str, Any], tool: types.Tool) -> dict[str, Any]:
    known = tool.input_schema["properties"]
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise invalid_params(f"unknown argument {', '.join(map(repr, unknown))} for {tool.name}; "
                             f"it takes {', '.join(known) or 'no arguments'}")
    for name in tool.input_schema.get("required", []):
        if arguments.get(name) is None:
            raise invalid_params(f"'{name}' is required: {known[name]['description']}")
    return arguments


def _int_argument(arguments: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = arguments.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise invalid_params(f"'{key}' must be an integer from {low} to {high}, got {value!r}", argument=key)
    return value


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
        raise AutodocError(UNKNOWN_WORKSPACE, "no workspace is registered in this database yet")
    raise invalid_params(f"'workspace' is needed: this database has {len(names)} workspaces ({', '.join(names)})",
                         workspaces=names)


# -- trimming texts to a token budget -----------------------------------------------------------


def line_tokens(line: str) -> int:
    """About four characters a token, the estimate the chunker sizes sections with (+1 for the line break)."""
    return len(line) // 4 + 1


class Budget:
    """Tokens left for texts; hands out whole lines only."""

    def __init__(self, tokens: int) -> None:
        self.total = tokens
        self.left = tokens
        self.trimmed = False

    def take(self, lines: list[str]) -> list[str]:
        """The longest leading run of ``lines`` that fits."""
        kept = []
        for line in lines:
            cost = line_tokens(line)
            if cost > self.left:
                self.trimmed = True
                break
            self.left -= cost
            kept.append(line)
        return kept

    @property
    def used(self) -> int:
        return self.total - self.left


# -- the tools ---------------------------------------------------------------------------------

Answer = tuple[dict[str, Any], str]


class Tools:
    def __init__(self, engines: EngineHandle, allow_index: bool) -> None:
        self.engines = engines
        self.listed = [*TOOLS, INDEX_TOOL] if allow_index else list(TOOLS)
        self.handlers: dict[str, Callable[[dict[str, Any]], Answer]] = {
            "search": self.search, "read": self.read, "documents": self.documents, "workspaces": self.workspaces,
        }
        if allow_index:
            self.handlers["index"] = self.index
        self.definitions = {tool.name: tool for tool in self.listed}

    def run(self, name: str, arguments: dict[str, Any]) -> Answer:
        return self.handlers[name](_checked(arguments, self.definitions[name]))

    def search(self, arguments: dict[str, Any]) -> Answer:
        query = _string_argument(arguments, "query")
        limit = _int_argument(arguments, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        budget = Budget(_int_argument(arguments, "max_tokens", DEFAULT_SEARCH_TOKENS, 0, MAX_TOKENS))
        engine = self.engines.get()
        name = _workspace(engine, arguments)
        options = {"limit": limit, **{k: arguments[k] for k in ("stages", "facets", "paths") if k in arguments}}
        answer = engine.search_query(name, query, options)
        files = FileLines(engine, name)
        hits = [_hit(rank, hit, files, budget) for rank, hit in enumerate(answer["hits"], 1)]
        result = {
            "workspace": name, "query": query, "hits": hits, "stages": answer["stages"],
            "semantic": answer["semantic"], "mode_used": answer["mode_used"],
            "max_tokens": budget.total, "text_tokens": budget.used, "trimmed": budget.trimmed,
        }
        return result, render_search(result)

    def read(self, arguments: dict[str, Any]) -> Answer:
        path = _string_argument(arguments, "path")
        budget = Budget(_int_argument(arguments, "max_tokens", DEFAULT_READ_TOKENS, 0, MAX_TOKENS))
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
        }
        return result, render_read(result, budget.total)

    def documents(self, arguments: dict[str, Any]) -> Answer:
        query = _string_argument(arguments, "query", "")
        limit = _int_argument(arguments, "limit", DEFAULT_DOCUMENTS, 1, MAX_DOCUMENTS)
        engine = self.engines.get()
        name = _workspace(engine, arguments)
        result = {"workspace": name, "documents": engine.doc_list(name, query, {"limit": limit})}
        return result, render_documents(result, query)

    def workspaces(self, arguments: dict[str, Any]) -> Answer:
        engine = self.engines.get()
        spaces = [_workspace_summary(engine.workspace_status(ws["name"])) for ws in engine.workspace_list()]
        result = {"workspaces": spaces}
        return result, render_workspaces(result)

    def index(self, arguments: dict[str, Any]) -> Answer:
        engine = self.engines.get()
        name = _workspace(engine, arguments)
        paths = arguments.get("paths")
        report = engine.workspace_index(name, {"paths": paths} if paths is not None else None)
        keys = ("scanned", "added", "changed", "renamed", "deleted", "unchanged", "skipped", "seconds", "semantic")
        result = {"workspace": name, **{key: report[key] for key in keys}, "problems": report.get("problems", [])}
        return result, render_index(result)


class FileLines:
    """Each hit's file read once per search, through the engine's doc_read (so inside the root only)."""

    def __init__(self, engine: Engine, workspace: str) -> None:
        self.engine, self.workspace = engine, workspace
        self.files: dict[str, list[str] | str] = {}

    def section(self, path: str, first: int, last: int) -> tuple[list[str], str | None]:
        """The lines first..last, and what went wrong when not all of them could be read."""
        if path not in self.files:
            try:
                self.files[path] = self.engine.doc_read(self.workspace, path)["text"].split("\n")
            except AutodocError as exc:  # deleted, or grown too large, since it was indexed
                self.files[path] = exc.reason
        lines = self.files[path]
        if isinstance(lines, str):
            return [], lines
        wanted = lines[first - 1 : last]
        if len(wanted) < last - first + 1:
            return wanted, "the file is shorter than when it was indexed; re-index it"
        return wanted, None


def _hit(rank: int, hit: dict[str, Any], files: FileLines, budget: Budget) -> dict[str, Any]:
    first, last = hit["line_start"], hit["line_end"]
    lines, problem = files.section(hit["path"], first, last)
    kept = budget.take(lines)
    shaped = {
        "rank": rank, "path": hit["path"], "title": hit["title"], "breadcrumb": hit["breadcrumb"],
        "kind": hit["kind"], "line_start": first, "line_end": last, "relevance": hit["relevance"],
        "via": hit["via"], "superseded_by": hit.get("superseded_by"), "text": "\n".join(kept),
        "text_line_end": first + len(kept) - 1, "text_complete": problem is None and len(kept) == len(lines),
    }
    if problem:
        shaped["text_problem"] = problem
    return shaped


def _workspace_summary(status: dict[str, Any]) -> dict[str, Any]:
    embedder = status.get("embedder")
    embedding = None
    if embedder:
        progress = embedder.get("progress") or {}
        embedding = {"provider": embedder["provider"], "model": embedder["model"], "embedded": embedder["embedded"],
                     "total": embedder["total"], "rate": progress.get("rate"),
                     "eta_seconds": progress.get("eta_seconds"), "error": progress.get("error")}
    return {
        "name": status["name"], "root": status["root"], "documents": status["documents"],
        "chunks": status["chunks"], "indexed_at": status["indexed_at"], "semantic": status["semantic"],
        "embedding": embedding, "problems": len(status["problems"]),
    }


# -- plain-text renderings, for clients that show only text --------------------------------------


def _stages_line(stages: dict[str, Any], semantic: str) -> str:
    parts = [f"{', '.join(stages['performed']) or 'nothing'} ran"]
    parts += [f"{stage} skipped: {why}" for stage, why in stages["skipped"].items()]
    return f"Stages: {'; '.join(parts)}. Semantic index: {semantic}."


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


def render_search(result: dict[str, Any]) -> str:
    hits = result["hits"]
    lines = [f"{_count(len(hits), 'hit')} for {result['query']!r} in workspace {result['workspace']}. "
             + _stages_line(result["stages"], result["semantic"])]
    for hit in hits:
        header = (f"[{hit['rank']}] {hit['path']}:{hit['line_start']}-{hit['line_end']} · {hit['breadcrumb']} · "
                  f"relevance {hit['relevance']:.2f} · via {', '.join(hit['via'])}")
        if hit.get("superseded_by"):
            header += f" · superseded by {hit['superseded_by']}"
        lines += ["", header]
        if hit["text"]:
            lines.append(hit["text"])
        if not hit["text_complete"]:
            lines.append(_rest_of(hit))
    if result["trimmed"]:
        lines += ["", f"(Section texts were trimmed to the {result['max_tokens']}-token budget, at line ends; "
                      "read the rest with the read tool or raise max_tokens.)"]
    return "\n".join(lines)


def _rest_of(hit: dict[str, Any]) -> str:
    if hit.get("text_problem"):
        return f"(text incomplete: {hit['text_problem']})"
    rest = f"read lines {hit['text_line_end'] + 1}-{hit['line_end']}"
    if not hit["text"]:
        return f"(no text: the token budget was spent; {rest})"
    return f"(text cut at line {hit['text_line_end']}; {rest} for the rest)"


def render_read(result: dict[str, Any], budget: int) -> str:
    header = f"{result['path']} lines {result['line_start']}-{result['line_end']} of {result['total_lines']}"
    text = f"{header}\n{result['text']}"
    if result["trimmed"]:
        text += f"\n(trimmed to {budget} tokens at a line end; continue with line_start {result['next_line']})"
    return text


def render_documents(result: dict[str, Any], query: str) -> str:
    documents = result["documents"]
    what = f"matching {query!r} " if query else ""
    lines = [f"{_count(len(documents), 'document')} {what}in workspace {result['workspace']}:"]
    for doc in documents:
        aliases = f" (aliases: {', '.join(doc['aliases'])})" if doc.get("aliases") else ""
        lines.append(f"- {doc['path']} · {doc['title']}{aliases} · {doc['line_count']} lines")
    return "\n".join(lines)


def render_workspaces(result: dict[str, Any]) -> str:
    if not result["workspaces"]:
        return "No workspace yet. " + FIXES[UNKNOWN_WORKSPACE]
    lines = []
    for ws in result["workspaces"]:
        embedding = ws["embedding"]
        progress = f" ({embedding['embedded']} of {embedding['total']} sections embedded)" if embedding else ""
        problems = f" · {_count(ws['problems'], 'file problem')}" if ws["problems"] else ""
        lines.append(f"- {ws['name']}: {ws['root']} · {_count(ws['documents'], 'document')}, "
                     f"{_count(ws['chunks'], 'section')} · semantic {ws['semantic']}{progress}{problems}")
    return "\n".join(lines)


def render_index(result: dict[str, Any]) -> str:
    counts = ", ".join(f"{result[key]} {key}" for key in ("added", "changed", "renamed", "deleted", "unchanged"))
    return (f"Indexed {result['workspace']} in {result['seconds']} s: {counts}, {result['skipped']} skipped. "
            f"Semantic index: {result['semantic']}.")


# -- errors and the server -----------------------------------------------------------------------


def error_result(tool: str, exc: AutodocError) -> types.CallToolResult:
    """An MCP tool error: the text names the problem and the fix; the structure carries the JSON-RPC code."""
    fix = FIXES.get(exc.code, "")
    name = CODE_NAMES.get(exc.code, "rpc.error")
    text = f"{tool} failed ({exc.code} {name}): {exc.reason}. {fix}".rstrip()
    error = {"code": exc.code, "name": name, "reason": exc.reason, "fix": fix, "data": exc.data}
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content={"error": error}, is_error=True)


def build_server(tools: Tools) -> Server:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in tools.handlers:
            hint = " (start the server with --allow-index for it)" if params.name == "index" else ""
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}{hint}; tools: {', '.join(tools.handlers)}")
        try:
            structured, text = await anyio.to_thread.run_sync(tools.run, params.name, params.arguments or {})
        except AutodocError as exc:
            return error_result(params.name, exc)
        except Exception as exc:  # a bug: reported as a tool error, and the server keeps serving
            log.exception("tool %s failed", params.name)
            return error_result(params.name, AutodocError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=structured)

    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[dict[str, Any]]:
        tools.engines.open_in_background()
        yield {}

    return Server("autodoc", version=__version__, title="AutoDoc", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool, lifespan=lifespan)


async def _serve(server: Server) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve(db: str | None, allow_index: bool = False) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin. Logs go to stderr."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="autodoc mcp: %(levelname)s %(name)s: %(message)s")
    engines = EngineHandle(db)
    try:
        anyio.run(_serve, build_server(Tools(engines, allow_index)))
    except KeyboardInterrupt:
        pass
    finally:
        engines.close()
    return 0
