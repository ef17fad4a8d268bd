"""The ``chunks`` table (a document's sections with their spans) and each workspace's FTS5 word index over
them, ``chunks_fts_<ws_id>``: two columns, "head" (title, breadcrumb, aliases, tags) and "body".

Each workspace has its own FTS5 table, so BM25 statistics are the workspace's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import apsw

from autodoc_core.parse.cjk import index_text
from autodoc_core.store.filters import Filters, where

# Tags in the weighted column, per chunk: a document with thousands (inline #tags) would repeat them all in
# every chunk. Every tag still filters (tag:...) and boosts.
HEAD_TAGS = 64
_PER_QUERY = 500  # ids in one ``IN (...)``


def fts_table(ws_id: int) -> str:
    return f"chunks_fts_{int(ws_id)}"


def create_fts_table(conn: apsw.Connection, ws_id: int) -> None:
    table = fts_table(ws_id)
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
        "head, body, content='', contentless_delete=1, tokenize='porter unicode61')"
    )


def drop_fts_table(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {fts_table(ws_id)}")


def head_text(title: str, breadcrumb: str, aliases: list[str], tags: list[str]) -> str:
    """The weighted column: title, breadcrumb, aliases and the first ``HEAD_TAGS`` tags, each phrase once."""
    parts = [title] if title and title not in breadcrumb else []
    return "\n".join([*parts, breadcrumb, *aliases, *tags[:HEAD_TAGS]])


# -- writing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spans:
    ord: int
    kind: str
    byte_start: int
    byte_end: int
    line_start: int
    line_end: int
    generation: int

    def values(self) -> tuple:
        return (self.ord, self.kind, self.byte_start, self.byte_end, self.line_start, self.line_end, self.generation)


def hashes_of_document(conn: apsw.Connection, doc_id: int) -> list[tuple[int, str]]:
    """(chunk id, text hash) of each of the document's chunks."""
    return conn.execute("SELECT id, text_hash FROM chunks WHERE doc_id = ?", (doc_id,)).fetchall()


def ids_of_document(conn: apsw.Connection, doc_id: int) -> list[int]:
    return [r[0] for r in conn.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]


def insert(conn: apsw.Connection, ws_id: int, doc_id: int, spans: Spans, breadcrumb: str, body: str,
           text_hash: str) -> int:
    return conn.execute(
        "INSERT INTO chunks(ws_id, doc_id, ord, kind, byte_start, byte_end, line_start, line_end, "
        "generation, breadcrumb, body, text_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
        (ws_id, doc_id, *spans.values(), breadcrumb, body, text_hash),
    ).fetchone()[0]


def move(conn: apsw.Connection, chunk_id: int, spans: Spans) -> None:
    """A kept chunk's new place in its document."""
    conn.execute(
        "UPDATE chunks SET ord=?, kind=?, byte_start=?, byte_end=?, line_start=?, line_end=?, "
        "generation=? WHERE id = ?",
        (*spans.values(), chunk_id),
    )


def index_words(conn: apsw.Connection, ws_id: int, chunk_id: int, head: str, body: str,
                replace: bool = False) -> None:
    """The chunk's row in the word index (``replace``: its old row goes first)."""
    table = fts_table(ws_id)
    if replace:
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (chunk_id,))
    conn.execute(f"INSERT INTO {table}(rowid, head, body) VALUES (?,?,?)",
                 (chunk_id, index_text(head), index_text(body)))


def delete(conn: apsw.Connection, ws_id: int, chunk_id: int) -> None:
    """The chunk and its row in the word index (its symbols are the symbols table's: ``symbols.delete``)."""
    conn.execute(f"DELETE FROM {fts_table(ws_id)} WHERE rowid = ?", (chunk_id,))
    conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))


def remove_workspace(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute("DELETE FROM chunks WHERE ws_id = ?", (ws_id,))
    drop_fts_table(conn, ws_id)


# -- reading -------------------------------------------------------------------------------


def count(conn: apsw.Connection, ws_id: int) -> int:
    return conn.execute("SELECT COUNT(*) FROM chunks WHERE ws_id = ?", (ws_id,)).fetchone()[0]


def sections_per_document(conn: apsw.Connection, ws_id: int) -> list[int]:
    """How many chunks each of the workspace's documents has, in no order."""
    return [n for (n,) in conn.execute(
        "SELECT COUNT(*) FROM chunks WHERE doc_id IN (SELECT id FROM documents WHERE ws_id = ?) GROUP BY doc_id",
        (ws_id,))]


def search(conn: apsw.Connection, ws_id: int, match: str, weights: tuple[float, float], filters: Filters,
           limit: int) -> list[tuple[int, float]]:
    """(chunk id, FTS5 bm25) of the best ``limit`` chunks matching ``match``, lowest (best) first. Raises
    apsw.SQLError for a malformed match expression."""
    table = fts_table(ws_id)
    # An explicit bm25() is measurably faster than ORDER BY rank with a configured rank function.
    score = f"bm25({table}, {weights[0]}, {weights[1]})"
    if filters:
        clauses, params = where(filters.all())
        sql = (
            f"SELECT f.rowid, {score} AS s FROM {table} f JOIN chunks c ON c.id = f.rowid "
            f"JOIN documents d ON d.id = c.doc_id WHERE {table} MATCH ?{clauses} ORDER BY s LIMIT ?"
        )
        return conn.execute(sql, (match, *params, limit)).fetchall()
    sql = f"SELECT rowid, {score} AS s FROM {table} WHERE {table} MATCH ? ORDER BY s LIMIT ?"
    return conn.execute(sql, (match, limit)).fetchall()


def _vocabulary(conn: apsw.Connection, ws_id: int) -> str:
    vocab = f"temp.vocab_{int(ws_id)}"
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} USING fts5vocab(main, '{fts_table(ws_id)}', 'row')")
    return vocab


def stem_count(conn: apsw.Connection, ws_id: int, stem: str) -> int:
    """How many chunks hold a stem as the index's tokenizer wrote it."""
    row = conn.execute(f"SELECT doc FROM {_vocabulary(conn, ws_id)} WHERE term = ?", (stem,)).fetchone()
    return row[0] if row else 0


def stem_counts(conn: apsw.Connection, ws_id: int, stems: list[str]) -> dict[str, int]:
    """``stem_count`` of each of these stems that some chunk holds (at most 500 a call)."""
    return dict(conn.execute(f"SELECT term, doc FROM {_vocabulary(conn, ws_id)} WHERE term IN "
                             f"({', '.join('?' * len(stems))})", stems))


@dataclass(frozen=True)
class Section:
    """A chunk as related sections read it: its place and its text."""

    chunk_id: int
    kind: str
    breadcrumb: str
    line_start: int
    line_end: int
    body: str


def sections_of_document(conn: apsw.Connection, doc_id: int) -> list[Section]:
    """The document's chunks in their order."""
    return [Section(*row) for row in conn.execute(
        "SELECT id, kind, breadcrumb, line_start, line_end, body FROM chunks WHERE doc_id = ? ORDER BY ord",
        (doc_id,))]


def of_documents(conn: apsw.Connection, doc_ids: list[int], filters: Filters) -> list[tuple[int, int]]:
    """(chunk id, document id) of these documents' chunks that the filters let through, in document id then
    section order."""
    marks = ", ".join("?" * len(doc_ids))
    clauses, params = where(filters.all())
    return conn.execute(
        f"SELECT c.id, c.doc_id FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.doc_id IN ({marks})"
        f"{clauses} ORDER BY c.doc_id, c.ord", (*doc_ids, *params)).fetchall()


def abstracts_among(conn: apsw.Connection, chunk_ids: list[int]) -> set[int]:
    """Which of these chunks are documents' abstracts."""
    if not chunk_ids:
        return set()
    marks = ", ".join("?" * len(chunk_ids))
    return {row[0] for row in conn.execute(f"SELECT id FROM chunks WHERE kind = 'abstract' AND id IN ({marks})",
                                           chunk_ids)}


def mean_body_chars(conn: apsw.Connection, ws_id: int) -> float:
    """The mean length of the workspace's chunk bodies in characters (0 for none)."""
    return conn.execute("SELECT AVG(LENGTH(body)) FROM chunks WHERE ws_id = ?", (ws_id,)).fetchone()[0] or 0.0


def matching_up_to(conn: apsw.Connection, ws_id: int, match: str, most: int) -> int:
    """How many chunks match ``match``, counted up to ``most`` (FTS5 reads no further postings)."""
    table = fts_table(ws_id)
    return conn.execute(f"SELECT COUNT(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH ? LIMIT ?)",
                        (match, most)).fetchone()[0]


def bodies(conn: apsw.Connection, chunk_ids: list[int]) -> dict[int, str]:
    if not chunk_ids:
        return {}
    marks = ", ".join("?" * len(chunk_ids))
    return dict(conn.execute(f"SELECT id, body FROM chunks WHERE id IN ({marks})", chunk_ids))


def texts(conn: apsw.Connection, chunk_ids: list[int]) -> Iterable[tuple[int, str, str]]:
    """(id, breadcrumb, body) of these chunks (those this snapshot has)."""
    marks = ",".join("?" * len(chunk_ids))
    return conn.execute(f"SELECT id, breadcrumb, body FROM chunks WHERE id IN ({marks})", tuple(chunk_ids))


_FUSION_ROWS = """
SELECT c.id, c.doc_id, c.kind, d.tags, d.inbound_links, d.successor_id, d.status
FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({marks})
"""


def fusion_rows(conn: apsw.Connection, chunk_ids: list[int]) -> Iterable[tuple]:
    """What fusing reads of each of these chunks this snapshot has (``hit_rows`` reads what a hit shows): id,
    document id, kind, tags (JSON), inbound links, successor id, status."""
    for start in range(0, len(chunk_ids), _PER_QUERY):
        part = chunk_ids[start : start + _PER_QUERY]
        yield from conn.execute(_FUSION_ROWS.format(marks=", ".join("?" * len(part))), part)


_HIT_ROWS = """
SELECT c.id, c.doc_id, d.path, c.breadcrumb, c.byte_start, c.byte_end, c.line_start, c.line_end,
       d.generation, d.tags, d.inbound_links, d.successor_id, d.status, d.title, c.kind,
       (SELECT path FROM documents s WHERE s.id = d.successor_id)
FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({marks})
"""


def hit_rows(conn: apsw.Connection, chunk_ids: list[int]) -> Iterable[tuple]:
    """For each of these chunks this snapshot has: id, document id, path, breadcrumb, byte and line spans,
    document generation, tags (JSON), inbound links, successor id, status, title, kind, successor's path."""
    for start in range(0, len(chunk_ids), _PER_QUERY):
        part = chunk_ids[start : start + _PER_QUERY]
        yield from conn.execute(_HIT_ROWS.format(marks=", ".join("?" * len(part))), part)
