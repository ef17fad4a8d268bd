"""AutoDoc engine: index Markdown knowledge bases into SQLite and search them.

The folders follow a document's way in and a query's way out:

    store/      the SQLite file: database, migrations, writer lease, workspaces and settings
    parse/      walk, frontmatter, markdown, chunk, document: a file becomes chunks with spans
    index/      indexer (files -> rows), vectors (rows -> embeddings, in the background)
    retrieve/   query (parsing), lexical (FTS5), symbols (identifiers), semantic (vectors)
    providers/  model clients: local MiniLM, TEI, OpenAI-compatible, Cohere; HTTP, deadlines
    rank/       fuse (blend or RRF, boosts), hits (cap per document, snippets, hit records)
    pipeline.py one search: options in, stages run, an answer that says what ran and why
    stream.py   following one search: its lexical answer handed over first, stopped between stages
    related.py  related sections: a section's stored vector, distinctive words and links, fused the same way
    service/    engine: the facade every surface calls
    surface/    rpc (JSON-RPC, stdio), cli (``autodoc``), mcp (Model Context Protocol)

``errors`` (the JSON-RPC codes and the one exception callers see) is shared by all of them.
"""

import os

# One BLAS thread per calling thread. Query-time matrix products are small, and two BLAS threads
# collapse when another process holds a core; bulk embedding gets its parallelism from its own
# worker threads instead (minilm.BertEncoder.embed(workers=...)), which also parallelises the
# element-wise work BLAS never sees. Must run before numpy is first imported.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

__version__ = "0.1.0"
