"""The ``facets`` table: a document's frontmatter fields and tags, one row a (field, value); values compare
case-insensitively (``COLLATE NOCASE``)."""

from __future__ import annotations

import apsw

# A vault of many notes with keys of their own would list hundreds of fields (in status, the MCP workspaces
# tool, every misspelt-field check): the ones most documents have.
MAX_FACET_FIELDS = 100


def replace(conn: apsw.Connection, ws_id: int, doc_id: int, facets: set[tuple[str, str]], new: bool = False) -> None:
    """The document's facets are now these (``new``: it had none)."""
    if not new:
        delete(conn, doc_id)
    conn.executemany("INSERT OR IGNORE INTO facets(ws_id, field, value, doc_id) VALUES (?,?,?,?)",
                     [(ws_id, name, value, doc_id) for name, value in facets])


def delete(conn: apsw.Connection, doc_id: int) -> None:
    conn.execute("DELETE FROM facets WHERE doc_id = ?", (doc_id,))


def remove_workspace(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute("DELETE FROM facets WHERE ws_id = ?", (ws_id,))


def has_value(conn: apsw.Connection, ws_id: int, name: str, values: tuple[str, str]) -> bool:
    """Whether some document has the field with one of these two values (a value and its folded twin)."""
    return conn.execute("SELECT 1 FROM facets WHERE ws_id = ? AND field = ? AND value IN (?, ?) LIMIT 1",
                        (ws_id, name, *values)).fetchone() is not None


def common_values(conn: apsw.Connection, ws_id: int, name: str, limit: int) -> list[str]:
    """The field's values that most documents have, most first."""
    return [value for (value,) in conn.execute(
        "SELECT value FROM facets WHERE ws_id = ? AND field = ? GROUP BY value ORDER BY COUNT(*) DESC, value "
        "LIMIT ?", (ws_id, name, limit))]


def fields(conn: apsw.Connection, ws_id: int) -> list[str]:
    """The facet fields the workspace's documents have (tags aside), by how many documents have each."""
    rows = conn.execute("SELECT field FROM facets WHERE ws_id = ? AND field <> 'tag' GROUP BY field "
                        "ORDER BY COUNT(DISTINCT doc_id) DESC, field LIMIT ?", (ws_id, MAX_FACET_FIELDS))
    return sorted(row[0] for row in rows)
