"""The MCP tools as an agent sees them: names, descriptions that teach their use, input and output
schemas, annotations (the fix each engine error code suggests is in tool_errors)."""

from __future__ import annotations

from typing import Any

from mcp import types

DEFAULT_LIMIT, MAX_LIMIT = 5, 50
DEFAULT_SEARCH_TOKENS = 2000
DEFAULT_READ_TOKENS = 8000
MIN_READ_TOKENS = 1
MAX_TOKENS = 200_000
DEFAULT_DOCUMENTS, MAX_DOCUMENTS = 20, 200


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


WORKSPACE_ARG = {"type": "string", "description": "Workspace name (a search hit's workspace, or see the workspaces "
                                                  "tool); optional when there is only one."}
SCOPE_ARG = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}],
             "description": "Leave it out to search every workspace; a workspace name, or a list of names, "
                            "narrows the search to those (see the workspaces tool)."}
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
Without workspace it searches every workspace of the database at once (one list, each hit naming its \
workspace: pass that to read); workspace narrows it to one name or a list of names.
Section texts share max_tokens (cut at line ends); a hit with text_complete false can be read in full \
with the read tool."""

RELATED_DESCRIPTION = """\
What else the knowledge base says about one of its files, or about the section holding a line of it: sections \
of other documents, found by meaning (the section's stored vector), by its most distinctive words, and by \
links either way (via: semantic, lexical, link), with their text as search gives it. Use it when you work on \
or next to a Markdown file of the workspace (editing a design note, or code that an ADR governs) to pull in \
the decisions, references and notes around it without guessing a query; use search when you know what to \
look for. path is relative to the workspace root (or absolute inside it); line (1-based) picks the section, \
none means the document as a whole. Without workspace the related sections come from every workspace (each hit \
names its own) and the file's workspace is the one holding path; a name (or a list, the file's first) narrows \
it."""

READ_DESCRIPTION = """\
Read a Markdown file of a workspace, or a line range of it (1-based, inclusive), e.g. a search hit's \
line_start..line_end or the lines around it, with the hit's workspace. Paths are relative to the workspace \
root, as search and documents return them; nothing outside the root can be read. Long texts are cut at a line end at \
max_tokens; the answer's next_line says where to continue (past a single line too long for \
max_tokens, whose start is given with line_cut true)."""

DOCUMENTS_DESCRIPTION = """\
Find documents by title, alias or path (case-insensitive substring; exact title or alias first). \
An empty query lists the workspace's documents in path order."""

WORKSPACES_DESCRIPTION = """\
List the knowledge bases this server searches: name, root folder, document and section counts, when \
last indexed, the semantic state with embedding progress (embedded of total sections), and the fields \
a query can filter on (field:value) with their types."""

INDEX_DESCRIPTION = """\
Re-index a workspace (or only the given relative paths) after files changed on disk: returns counts \
of added, changed, renamed and deleted files. Embedding the new sections continues in the background."""

HIT = _object({
    "rank": {"type": "integer"},
    "workspace": {"type": "string", "description": "the hit's workspace: pass it to read"},
    "path": {"type": "string", "description": "relative to the workspace root"},
    "title": {"type": "string"},
    "breadcrumb": {"type": "string", "description": "the headings down to this section"},
    "kind": {"type": "string", "description": "section, abstract, or document for facet-only queries"},
    "line_start": {"type": "integer"},
    "line_end": {"type": "integer"},
    "relevance": {"type": "number", "description": "0..1: how well this section alone matches, in the stages "
                                                   "that ran, and never more than the hit above it (the order "
                                                   "also counts the document's other sections and boosts), so "
                                                   "it never rises down the list"},
    "via": {**STRINGS, "description": "the retrievers that found it: lexical, semantic, symbol, rank, facet; "
                                         "for related also link"},
    "superseded_by": {"type": ["string", "null"]},
    "text": {"type": "string", "description": "the section's lines line_start..text_line_end"},
    "text_line_end": {"type": "integer"},
    "text_complete": {"type": "boolean"},
    "text_problem": {"type": "string", "description": "why the text could not be read in full, or may not be "
                                                      "the section: the file changed since it was indexed; or "
                                                      "that it is gone and the text is the index's copy"},
}, ["path", "breadcrumb", "line_start", "line_end", "relevance", "via", "text", "text_complete"], closed=False)

SEARCH_OUTPUT = _object({
    "workspace": {"type": "string", "description": "the workspace searched, \"*\" for every one, or the names "
                                                   "asked for joined with commas"},
    "workspaces": {**STRINGS, "description": "the workspaces searched"},
    "query": {"type": "string"},
    "hits": {"type": "array", "items": HIT},
    "stages": _object({"requested": STRINGS, "performed": STRINGS,
                       "skipped": {"type": "object", "additionalProperties": {"type": "string"}}},
                      ["requested", "performed", "skipped"], closed=False),
    "semantic": STATE,
    "semantic_by_workspace": {"type": "object", "description": "only when the workspaces searched differ: each "
                              "one's semantic state (semantic above is the least ready of them)",
                              "additionalProperties": {"type": ["string", "null"]}},
    "embedding": {"type": "object", "description": "only while a workspace searched is partial or switching: how "
                  "many of its sections have a vector so far (embedded of total; workspaces: which ones, when "
                  "several were searched; switching: those where a new model fills, their search by meaning off "
                  "meanwhile; paused: embedding.pause holds the fill); a search by meaning cannot "
                  "find the rest yet",
                  "properties": {"embedded": {"type": "integer"}, "total": {"type": "integer"},
                                 "workspaces": {"type": "array", "items": {"type": "string"}},
                                 "switching": {"type": "array", "items": {"type": "string"}},
                                 "paused": {"type": "boolean"}}},
    "mode_used": {"type": "string"},
    "max_tokens": {"type": "integer"},
    "text_tokens": {"type": "integer", "description": "estimated tokens of all hit texts"},
    "trimmed": {"type": "boolean", "description": "true when some hit text was cut to fit max_tokens"},
    "notes": {**STRINGS, "description": "what was done with the query that the hits do not show: a facet value "
                                        "or path that matches nothing, common words left out"},
}, ["workspace", "hits", "stages", "semantic", "trimmed"], closed=False)

RELATED_OUTPUT = _object({
    **SEARCH_OUTPUT["properties"],
    "path": {"type": "string", "description": "the file asked about, relative to the workspace root"},
    "section": {"type": ["object", "null"], "description": "the section holding line (breadcrumb, line_start, "
                                                          "line_end); null for the document as a whole"},
}, ["workspace", "path", "hits", "stages", "semantic", "trimmed"], closed=False)

READ_OUTPUT = _object({
    "workspace": {"type": "string"},
    "path": {"type": "string"},
    "line_start": {"type": "integer"},
    "line_end": {"type": "integer", "description": "the last line in text"},
    "total_lines": {"type": "integer"},
    "text": {"type": "string"},
    "trimmed": {"type": "boolean"},
    "next_line": {"type": ["integer", "null"], "description": "where to continue when trimmed"},
    "line_cut": {"type": "boolean", "description": "true when line_end alone is longer than max_tokens: only its "
                                                   "start is in text, ending in ' …'"},
    "changed_since_indexed": {"type": ["boolean", "null"], "description": "true when the file changed since it "
                              "was indexed (line numbers from a search may be off); null when it is not indexed"},
    "text_source": {"type": "string", "description": "only when the text is not the file's own: the index's copy "
                    "(a replica has no folder; the file, or its workspace's folder, is gone)"},
}, ["path", "line_start", "line_end", "total_lines", "text", "trimmed"], closed=False)

DOCUMENTS_OUTPUT = _object({
    "workspace": {"type": "string"},
    "documents": {"type": "array", "items": _object({
        "path": {"type": "string"}, "title": {"type": "string"}, "aliases": STRINGS,
        "line_count": {"type": "integer"}}, ["path", "title"], closed=False)},
    "offset": {"type": "integer"},
    "next_offset": {"type": ["integer", "null"], "description": "where the next page starts; null at the end"},
}, ["workspace", "documents"], closed=False)

EMBEDDING = {"type": ["object", "null"], "properties": {
    "provider": {"type": "string"}, "model": {"type": "string"}, "embedded": {"type": "integer"},
    "total": {"type": "integer"}, "rate": {"type": ["number", "null"]}, "eta_seconds": {"type": ["number", "null"]},
    "error": {"type": ["string", "null"]}}}

WORKSPACES_OUTPUT = _object({
    "workspaces": {"type": "array", "items": _object({
        "name": {"type": "string"}, "root": {"type": "string"}, "documents": {"type": "integer"},
        "chunks": {"type": "integer"}, "indexed_at": {"type": ["number", "null"]}, "semantic": STATE,
        "embedding": EMBEDDING, "problems": {"type": "integer"},
        "root_missing": {"type": "boolean", "description": "the root folder is not there (a drive not mounted?): "
                                                            "its documents stay indexed, but reading them fails"},
        "facets": {"type": "object", "additionalProperties": {"type": "string"},
                   "description": "fields a query filters on with field:value, and their types"}},
        ["name", "root", "documents", "chunks", "semantic"], closed=False)},
}, ["workspaces"], closed=False)

INDEX_OUTPUT = _object({
    "workspace": {"type": "string"}, "scanned": {"type": "integer"}, "added": {"type": "integer"},
    "changed": {"type": "integer"}, "renamed": {"type": "integer"}, "deleted": {"type": "integer"},
    "unchanged": {"type": "integer"}, "skipped": {"type": "integer"}, "seconds": {"type": "number"},
    "semantic": STATE,
    "not_indexed": {"type": "array", "description": "given paths that are not indexed, each with why",
                    "items": _object({"path": {"type": "string"}, "reason": {"type": "string"}},
                                     ["path", "reason"], closed=False)},
}, ["workspace", "semantic"], closed=False)

READ_ONLY = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)

TOOLS = [
    types.Tool(
        name="search", title="Search the knowledge base", description=SEARCH_DESCRIPTION,
        input_schema=_object({
            "query": {"type": "string", "description": "words, \"phrases\", prefix*, field:value facets"},
            "workspace": SCOPE_ARG,
            "limit": _integer("hits to return", 1, MAX_LIMIT, DEFAULT_LIMIT),
            "stages": {"type": "array", "items": {"type": "string", "enum": ["lexical", "semantic", "rerank"]},
                       "description": "which stages to run (default: all available); include lexical or "
                                      "semantic"},
            "facets": {"type": "object", "description": "front-matter filters {\"field\": value or [values]}; "
                                                        "the fields are those the workspaces tool lists"},
            "paths": {**STRINGS, "description": "folder prefixes to search in, e.g. [\"adr\", \"design/api\"]"},
            "max_tokens": _integer("token budget for all hit texts together", 0, MAX_TOKENS,
                                   DEFAULT_SEARCH_TOKENS),
        }, ["query"]),
        output_schema=SEARCH_OUTPUT, annotations=READ_ONLY),
    types.Tool(
        name="related", title="Related sections", description=RELATED_DESCRIPTION,
        input_schema=_object({
            "path": {"type": "string", "description": "relative to the workspace root, e.g. adr/0002-store.md"},
            "workspace": SCOPE_ARG,
            "line": {"type": "integer", "minimum": 1, "description": "a line of the section to relate (default: "
                                                                      "the document as a whole)"},
            "limit": _integer("hits to return", 1, MAX_LIMIT, DEFAULT_LIMIT),
            "max_tokens": _integer("token budget for all hit texts together", 0, MAX_TOKENS,
                                   DEFAULT_SEARCH_TOKENS),
        }, ["path"]),
        output_schema=RELATED_OUTPUT, annotations=READ_ONLY),
    types.Tool(
        name="read", title="Read a document", description=READ_DESCRIPTION,
        input_schema=_object({
            "path": {"type": "string", "description": "relative to the workspace root, e.g. adr/0002-store.md"},
            "workspace": WORKSPACE_ARG,
            "line_start": {"type": "integer", "minimum": 1, "description": "first line (default 1)"},
            "line_end": {"type": "integer", "minimum": 1, "description": "last line (default: the end)"},
            "max_tokens": _integer("token budget for the text", MIN_READ_TOKENS, MAX_TOKENS, DEFAULT_READ_TOKENS),
        }, ["path"]),
        output_schema=READ_OUTPUT, annotations=READ_ONLY),
    types.Tool(
        name="documents", title="Find documents", description=DOCUMENTS_DESCRIPTION,
        input_schema=_object({
            "query": {"type": "string", "description": "part of a title, alias or path; empty lists all"},
            "workspace": WORKSPACE_ARG,
            "limit": _integer("documents to return", 1, MAX_DOCUMENTS, DEFAULT_DOCUMENTS),
            "offset": _integer("documents to pass over first (the last answer's next_offset)", 0, 10**9, 0),
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
    "Working on a file of the knowledge base (or on code next to one), call related with its path (and a line) "
    "for what else the knowledge base says about it. Both search every workspace unless told one; each hit names "
    "its workspace, which read takes. Use read for more context around a hit, documents to find "
    "a file by title, workspaces for what is indexed."
)


# -- the engine, opened off the start-up path -------------------------------------------------
