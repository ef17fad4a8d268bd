"""The schema, as an ordered list of migrations. ``PRAGMA user_version`` records how many ran.

Append new migrations; never edit one that has shipped.
"""

MIGRATIONS: list[str] = [
    # 1: workspaces, documents, chunks, facets, links, problems, change log. Each workspace has its
    # own FTS5 table (see store.chunks.create_fts_table), so BM25 statistics are the workspace's own.
    """
    CREATE TABLE workspaces(
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        root TEXT NOT NULL,
        config TEXT NOT NULL DEFAULT '{}',
        next_generation INTEGER NOT NULL DEFAULT 1,
        indexed_at REAL
    );
    CREATE TABLE documents(
        id INTEGER PRIMARY KEY,
        ws_id INTEGER NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        content_hash TEXT NOT NULL,
        chunked_with TEXT NOT NULL,
        generation INTEGER NOT NULL,
        successor_id INTEGER,
        inbound_links INTEGER NOT NULL DEFAULT 0,
        line_count INTEGER NOT NULL,
        title TEXT NOT NULL,
        doc_type TEXT,
        status TEXT,
        aliases TEXT NOT NULL DEFAULT '[]',
        tags TEXT NOT NULL DEFAULT '[]',
        supersedes TEXT NOT NULL DEFAULT '[]',
        superseded_by TEXT NOT NULL DEFAULT '[]',
        meta TEXT NOT NULL DEFAULT '{}',  -- last: large values stay off the hot columns' pages
        UNIQUE(ws_id, path)
    );
    CREATE INDEX documents_hash ON documents(ws_id, content_hash);
    CREATE INDEX documents_inbound ON documents(ws_id, inbound_links);
    CREATE TABLE chunks(
        id INTEGER PRIMARY KEY,
        ws_id INTEGER NOT NULL,
        doc_id INTEGER NOT NULL,
        ord INTEGER NOT NULL,
        kind TEXT NOT NULL,
        byte_start INTEGER NOT NULL,
        byte_end INTEGER NOT NULL,
        line_start INTEGER NOT NULL,
        line_end INTEGER NOT NULL,
        generation INTEGER NOT NULL,
        text_hash TEXT NOT NULL,
        breadcrumb TEXT NOT NULL,
        body TEXT NOT NULL  -- last: reading the columns before it never walks its overflow pages
    );
    CREATE INDEX chunks_doc ON chunks(doc_id, ord);
    CREATE INDEX chunks_hash ON chunks(ws_id, text_hash);
    CREATE TABLE facets(
        ws_id INTEGER NOT NULL,
        field TEXT NOT NULL,
        value TEXT NOT NULL COLLATE NOCASE,
        doc_id INTEGER NOT NULL,
        PRIMARY KEY(ws_id, field, value, doc_id)
    ) WITHOUT ROWID;
    CREATE INDEX facets_doc ON facets(doc_id);
    CREATE TABLE doc_keys(
        ws_id INTEGER NOT NULL,
        key TEXT NOT NULL,
        doc_id INTEGER NOT NULL,
        PRIMARY KEY(ws_id, key, doc_id)
    ) WITHOUT ROWID;
    CREATE INDEX doc_keys_doc ON doc_keys(doc_id);
    CREATE TABLE links(
        ws_id INTEGER NOT NULL,
        src_doc_id INTEGER NOT NULL,
        target_key TEXT NOT NULL
    );
    CREATE INDEX links_src ON links(src_doc_id);
    CREATE INDEX links_target ON links(ws_id, target_key);
    CREATE TABLE problems(
        ws_id INTEGER NOT NULL,
        path TEXT NOT NULL,
        kind TEXT NOT NULL,
        reason TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX problems_path ON problems(ws_id, path);
    CREATE TABLE changes(
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        ws_id INTEGER NOT NULL,
        op TEXT NOT NULL,
        path TEXT NOT NULL,
        generation INTEGER NOT NULL,
        at REAL NOT NULL,
        detail TEXT
    );
    CREATE INDEX changes_ws ON changes(ws_id, seq);
    """,
    # 2: chunk embeddings keyed by (workspace, model, text hash), shared by identical sections;
    # the workspace's active model and a counter bumped whenever chunks or vectors change.
    """
    CREATE TABLE embeddings(
        id INTEGER PRIMARY KEY,
        ws_id INTEGER NOT NULL,
        model_fp TEXT NOT NULL,
        text_hash TEXT NOT NULL,
        bits_bytes BLOB NOT NULL,
        f32_bytes BLOB NOT NULL
    );
    CREATE UNIQUE INDEX embeddings_key ON embeddings(ws_id, model_fp, text_hash);
    ALTER TABLE workspaces ADD COLUMN active_model_fp TEXT;
    ALTER TABLE workspaces ADD COLUMN vector_epoch INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: identifiers per chunk for the symbol retriever; each qualified name also under its
    # shorter suffixes (suffix = 1). Filled as documents are re-parsed (PARSER_VERSION 2).
    """
    CREATE TABLE symbols(
        ws_id INTEGER NOT NULL,
        symbol TEXT NOT NULL,
        folded TEXT NOT NULL,
        suffix INTEGER NOT NULL,
        weight INTEGER NOT NULL,
        chunk_id INTEGER NOT NULL
    );
    CREATE INDEX symbols_exact ON symbols(ws_id, symbol);
    CREATE INDEX symbols_folded ON symbols(ws_id, folded);
    CREATE INDEX symbols_chunk ON symbols(chunk_id);
    """,
    # 4: set in the same transaction as a document write, cleared when links and supersession
    # are resolved: a run killed in between resolves them on the next start.
    """
    ALTER TABLE workspaces ADD COLUMN links_dirty INTEGER NOT NULL DEFAULT 0;
    """,
    # 5: a remote model's vector for a fixed text, per workspace and model: a server that swaps the model
    # behind the same name and dimensions changes it, and the workspace's vectors are made again.
    """
    CREATE TABLE model_checks(
        ws_id INTEGER NOT NULL,
        model_fp TEXT NOT NULL,
        vector BLOB NOT NULL,
        PRIMARY KEY(ws_id, model_fp)
    );
    """,
    # 6: flags of the whole database, for every process on it (store.flags): embedding.pause outlives the
    # process that was asked, until embedding.resume.
    """
    CREATE TABLE flags(
        name TEXT PRIMARY KEY,
        set_at REAL NOT NULL
    ) WITHOUT ROWID;
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
