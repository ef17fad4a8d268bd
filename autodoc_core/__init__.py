"""AutoDoc engine: index Markdown knowledge bases into SQLite and search them.

The folders follow a document's way in and a query's way out, one floor above another:

    parse/      walk, frontmatter, markdown, chunk, document, symbols (identifiers in a chunk), cjk (CJK
                text as the word index holds it): a file becomes chunks with spans
    providers/  model clients: local MiniLM, TEI, OpenAI-compatible, Cohere; HTTP, deadlines
    store/      the SQLite file, and all of its SQL: database, migrations, writer lease, replica (a read replica's
                mark and its never-held lease); one module per family of tables (workspace, documents, links,
                chunks with the FTS table, facets, symbols, embeddings with the semantic states and the sign-bit
                codec, changes, flags) and filters (the clauses every retriever adds, each with its parameters)
    index/      indexer (files -> rows), parsing, links, report, vectors (rows -> embeddings, in the background)
    retrieve/   options, query (parsing), filters, lexical (FTS5), symbols (identifier-shaped queries),
                semantic (vectors), semantic_stage, linked, more_like_this
    rank/       fuse (blend or RRF, boosts), hits (cap per document, snippets, hit records), rerank
    search/     one search: stages (the ``Stage`` names, and ``Candidates``: one retriever's chunk ids in rank
                order with their scores, what ``rank/fuse`` takes), answer (the answer as typed records:
                SearchAnswer, its StageReport composed of each stage's StageNote, QueryInfo, RankState, Timer,
                and its JSON shape, made in one place: SearchAnswer.to_wire), search_run (what one search
                works with, SearchRun, read by its stages and written by none, and the stages search and
                related share), stream (following one search: its lexical answer handed
                over first, stopped between stages), pipeline (options in, stages run and fused, a
                SearchAnswer that says what ran and why), scope (a search of several workspaces: the scope
                resolved to names, their answers merged into one, hits weighed by each workspace's match)
    related/    related sections: a section's stored vector, distinctive words and links, fused the same way
    service/    engine: the facade every surface calls; scoped (a scope's workspaces searched side by side);
                semantic_runtime (each workspace's embedder, ranker,
                vectors in memory), documents, changes, filler, scanner
    surface/    rpc (JSON-RPC, stdio), cli (``autodoc``; cli_commands: search, related, status for a person),
                mcp (Model Context Protocol; tool_arguments checks a call against its tool's schema, tool_errors
                words a failure for the tools the agent has), agent_tool (the same tools for the editor's
                agents), mcp_http (with http_guard and http_access_log; prometheus for /metrics; replication:
                Litestream for --replicate-to and --replica-of; workers for --workers)

``errors`` (the JSON-RPC codes and the one exception callers see) and ``search.stages`` are shared by all of
them. ``FLOORS`` is the map as data: a module imports only from its own folder or module and from floors below
its own, never from one beside it on the same floor (``index`` and ``retrieve`` do not import each other);
tests/test_docs.py holds the code to it. search/ is one floor, but for ``search.stages``, on the ground floor:
the stage names and ``Candidates`` are the words retrieve/ and rank/ speak with the search above them.
"""

import os

# One BLAS thread per calling thread. Query-time matrix products are small, and two BLAS threads
# collapse when another process holds a core; bulk embedding gets its parallelism from its own
# worker threads instead (onnx_encoder.OnnxEncoder.embed(workers=...)), which also parallelises the
# element-wise work BLAS never sees. Must run before numpy is first imported.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

__version__ = "0.1.0"

FLOORS: tuple[tuple[str, ...], ...] = (
    ("__init__", "errors", "search.stages"),
    ("parse", "providers"),
    ("store",),
    ("index", "retrieve"),
    ("rank",),
    ("search",),
    ("related",),
    ("service",),
    ("surface",),
    ("__main__",),
)
