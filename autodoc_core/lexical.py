"""Stage 1: FTS5 BM25 over a workspace's chunks, with field weights.

Words are ANDed first; when that finds fewer than ``AND_ENOUGH`` chunks, an OR of the same words
ranks partial matches below the full ones, so long natural-language questions still answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import apsw

from .query import ParsedQuery, Term

CANDIDATES = 50
AND_ENOUGH = 10
# title, breadcrumb, aliases, tags, body
FIELD_WEIGHTS = (3.0, 2.0, 3.0, 2.0, 1.0)


def fts_table(ws_id: int) -> str:
    return f"chunks_fts_{int(ws_id)}"


def create_fts_table(conn: apsw.Connection, ws_id: int) -> None:
    table = fts_table(ws_id)
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
        "title, breadcrumb, aliases, tags, body, "
        "content='', contentless_delete=1, tokenize='porter unicode61')"
    )
    weights = ", ".join(str(w) for w in FIELD_WEIGHTS)
    conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('rank', 'bm25({weights})')")


def drop_fts_table(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {fts_table(ws_id)}")


@dataclass
class Filters:
    """SQL over ``c`` (chunks) and ``d`` (documents) that every hit must satisfy."""

    clauses: list[str] = field(default_factory=list)
    params: list = field(default_factory=list)

    def sql(self) -> str:
        return "".join(f" AND {clause}" for clause in self.clauses)


@dataclass
class LexicalResult:
    chunk_ids: list[int]
    scores: dict[int, float]
    strategy: str
    match: str


def match_expression(terms: list[Term], operator: str) -> str:
    return f" {operator} ".join(term.fts() for term in terms)


def search(conn: apsw.Connection, ws_id: int, query: ParsedQuery, filters: Filters,
           limit: int = CANDIDATES) -> LexicalResult:
    if not query.terms:
        return LexicalResult([], {}, "none", "")
    conjunctive = match_expression(query.terms, "AND")
    ids, scores = _run(conn, ws_id, conjunctive, filters, limit)
    if len(ids) >= min(AND_ENOUGH, limit) or len(query.terms) == 1:
        return LexicalResult(ids, scores, "and", conjunctive)
    disjunctive = match_expression(query.terms, "OR")
    more_ids, more_scores = _run(conn, ws_id, disjunctive, filters, limit)
    seen = set(ids)
    merged = ids + [i for i in more_ids if i not in seen]
    for chunk_id, score in more_scores.items():
        scores.setdefault(chunk_id, score)
    return LexicalResult(merged[:limit], scores, "and+or" if ids else "or", disjunctive)


def _run(conn: apsw.Connection, ws_id: int, match: str, filters: Filters, limit: int):
    table = fts_table(ws_id)
    if filters.clauses:
        sql = (
            f"SELECT f.rowid, -f.rank FROM {table} f JOIN chunks c ON c.id = f.rowid "
            f"JOIN documents d ON d.id = c.doc_id WHERE {table} MATCH ?{filters.sql()} ORDER BY f.rank LIMIT ?"
        )
        params = (match, *filters.params, limit)
    else:
        sql = f"SELECT rowid, -rank FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?"
        params = (match, limit)
    try:
        rows = conn.execute(sql, params).fetchall()
    except apsw.SQLError:
        # Every term is quoted, so this should not happen; a query must never fail the search.
        return [], {}
    return [r[0] for r in rows], {r[0]: r[1] for r in rows}
