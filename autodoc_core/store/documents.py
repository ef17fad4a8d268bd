"""The ``documents`` table (one row a Markdown file: its change-detection stamp, frontmatter fields, link
counts and successor) and ``problems`` (what indexing a path said: skipped, or warnings)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

import apsw

from autodoc_core.store.filters import Clause, where


@dataclass(frozen=True)
class Stamp:
    """What a run compares to tell whether a file changed."""

    id: int
    size: int
    mtime_ns: int
    content_hash: str
    parsed_with: str


@dataclass(frozen=True)
class Fields:
    """A document as parsed, for its row."""

    path: str
    size: int
    mtime_ns: int
    content_hash: str
    parsed_with: str
    generation: int
    title: str
    doc_type: str | None
    status: str | None
    aliases: list[str]
    tags: list[str]
    meta: dict
    supersedes: list
    superseded_by: list
    line_count: int

    def values(self) -> tuple:
        return (self.path, self.size, self.mtime_ns, self.content_hash, self.parsed_with, self.generation,
                self.title, self.doc_type, self.status, json.dumps(self.aliases), json.dumps(self.tags),
                json.dumps(self.meta, ensure_ascii=False), json.dumps(self.supersedes),
                json.dumps(self.superseded_by), self.line_count)


_COLUMNS = ("path, size, mtime_ns, content_hash, chunked_with, generation, title, doc_type, status, aliases, "
            "tags, meta, supersedes, superseded_by, line_count")
_STAMP = "SELECT path, id, size, mtime_ns, content_hash, chunked_with FROM documents WHERE ws_id = ?"


def stamps(conn: apsw.Connection, ws_id: int, paths: list[str] | None = None) -> dict[str, Stamp]:
    """The stored documents' stamps by path (only those at ``paths`` when given)."""
    if paths is None:
        rows = conn.execute(_STAMP, (ws_id,)).fetchall()
    else:
        rows = [row for path in dict.fromkeys(paths) for row in conn.execute(f"{_STAMP} AND path = ?", (ws_id, path))]
    return {r[0]: Stamp(*r[1:]) for r in rows}


def touch(conn: apsw.Connection, doc_id: int, size: int, mtime_ns: int) -> None:
    """The same content at a new size or time."""
    conn.execute("UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, doc_id))


def insert(conn: apsw.Connection, ws_id: int, fields: Fields) -> int:
    return conn.execute(f"INSERT INTO documents(ws_id, {_COLUMNS}) VALUES (?, {', '.join('?' * 15)}) RETURNING id",
                        (ws_id, *fields.values())).fetchone()[0]


def update(conn: apsw.Connection, doc_id: int, fields: Fields) -> None:
    assignments = ", ".join(f"{c.strip()} = ?" for c in _COLUMNS.split(","))
    conn.execute(f"UPDATE documents SET {assignments} WHERE id = ?", (*fields.values(), doc_id))


def head_fields(conn: apsw.Connection, doc_id: int) -> tuple[str, list[str], list[str]]:
    """The fields every chunk's weighted column repeats: title, aliases, tags."""
    title, aliases, tags = conn.execute("SELECT title, aliases, tags FROM documents WHERE id = ?",
                                        (doc_id,)).fetchone()
    return title, json.loads(aliases), json.loads(tags)


def supersession(conn: apsw.Connection, doc_id: int) -> tuple[str, str]:
    """The document's supersedes and superseded_by, as stored (JSON)."""
    return tuple(conn.execute("SELECT supersedes, superseded_by FROM documents WHERE id = ?", (doc_id,)).fetchone())


def for_link_resolution(conn: apsw.Connection, ws_id: int) -> list[tuple[int, str, str, str, int, int | None]]:
    """(id, path, supersedes, superseded_by, inbound links, successor id) of every document."""
    return conn.execute(
        "SELECT id, path, supersedes, superseded_by, inbound_links, successor_id FROM documents WHERE ws_id = ?",
        (ws_id,),
    ).fetchall()


def set_links(conn: apsw.Connection, doc_id: int, inbound: int, successor_id: int | None) -> None:
    conn.execute("UPDATE documents SET inbound_links = ?, successor_id = ? WHERE id = ?",
                 (inbound, successor_id, doc_id))


def delete(conn: apsw.Connection, doc_id: int) -> None:
    conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))


def remove_workspace(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute("DELETE FROM problems WHERE ws_id = ?", (ws_id,))
    conn.execute("DELETE FROM documents WHERE ws_id = ?", (ws_id,))


# -- reading -------------------------------------------------------------------------------


def count_and_generation(conn: apsw.Connection, ws_id: int) -> tuple[int, int]:
    """How many documents, and the newest one's generation (0 for none)."""
    return tuple(conn.execute("SELECT COUNT(*), COALESCE(MAX(generation), 0) FROM documents WHERE ws_id = ?",
                              (ws_id,)).fetchone())


def most_inbound(conn: apsw.Connection, ws_id: int) -> int:
    return conn.execute("SELECT COALESCE(MAX(inbound_links), 0) FROM documents WHERE ws_id = ?",
                        (ws_id,)).fetchone()[0]


def has_other(conn: apsw.Connection, ws_id: int, doc_id: int) -> bool:
    """Whether the workspace holds a document besides this one."""
    # Not COUNT(*): that reads every document's index entry (90,000 of them at a million sections).
    return conn.execute("SELECT EXISTS (SELECT 1 FROM documents WHERE ws_id = ? AND id <> ?)",
                        (ws_id, doc_id)).fetchone()[0] == 1


@dataclass(frozen=True)
class Located:
    id: int
    line_count: int
    tags: str  # JSON, as stored


def located(conn: apsw.Connection, ws_id: int, path: str) -> Located | None:
    """The document at this path (None: none is indexed there)."""
    row = conn.execute("SELECT id, line_count, tags FROM documents WHERE ws_id = ? AND path = ?",
                       (ws_id, path)).fetchone()
    return Located(*row) if row else None


def content_hash_at(conn: apsw.Connection, ws_id: int, path: str) -> str | None:
    row = conn.execute("SELECT content_hash FROM documents WHERE ws_id = ? AND path = ?", (ws_id, path)).fetchone()
    return row[0] if row else None


def any_at(conn: apsw.Connection, ws_id: int, prefix: str) -> bool:
    """Whether a document is at this path or inside this folder."""
    return conn.execute("SELECT 1 FROM documents WHERE ws_id = ? AND (path = ? OR (path >= ? AND path < ?))",
                        (ws_id, prefix, prefix + "/", prefix + "0")).fetchone() is not None


def names(conn: apsw.Connection, ws_id: int) -> list[tuple[str, str, str, int]]:
    """(path, title, aliases as JSON, line count) of every document, in path order."""
    return conn.execute("SELECT path, title, aliases, line_count FROM documents WHERE ws_id = ? ORDER BY path",
                        (ws_id,)).fetchall()


def passing(conn: apsw.Connection, ws_id: int, clauses: list[Clause]) -> list[int]:
    """The ids of the documents these clauses (over ``d``) let through."""
    sql, params = where(clauses)
    return [r[0] for r in conn.execute("SELECT d.id FROM documents d WHERE d.ws_id = ?" + sql, (ws_id, *params))]


def listed(conn: apsw.Connection, ws_id: int, clauses: list[Clause], limit: int) -> Iterable[tuple]:
    """Documents these clauses let through, in path order: id, path, title, generation, line count, size,
    status, successor id, successor's path."""
    sql, params = where(clauses)
    return conn.execute(
        "SELECT d.id, d.path, d.title, d.generation, d.line_count, d.size, d.status, d.successor_id, "
        "(SELECT path FROM documents s WHERE s.id = d.successor_id) "
        "FROM documents d WHERE d.ws_id = ?" + sql + " ORDER BY d.path LIMIT ?", [ws_id, *params, limit])


# -- problems ------------------------------------------------------------------------------


def paths_with_problems(conn: apsw.Connection, ws_id: int) -> set[str]:
    return {r[0] for r in conn.execute("SELECT DISTINCT path FROM problems WHERE ws_id = ?", (ws_id,))}


def set_problems(conn: apsw.Connection, ws_id: int, path: str, kind: str, reasons: list[str]) -> None:
    """The path's problems are now these (none: it has none)."""
    conn.execute("DELETE FROM problems WHERE ws_id = ? AND path = ?", (ws_id, path))
    now = time.time()
    conn.executemany("INSERT INTO problems(ws_id, path, kind, reason, at) VALUES (?,?,?,?,?)",
                     [(ws_id, path, kind, reason, now) for reason in reasons])


def problems(conn: apsw.Connection, ws_id: int) -> list[dict]:
    rows = conn.execute("SELECT path, kind, reason FROM problems WHERE ws_id = ? ORDER BY path", (ws_id,))
    return [{"path": p, "kind": k, "reason": r} for p, k, r in rows]
