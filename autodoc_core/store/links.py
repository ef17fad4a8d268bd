"""The link graph's tables: ``doc_keys`` (the keys a document can be linked by: path, file name, title,
aliases) and ``links`` (the keys a document links to). A key several documents share names the first."""

from __future__ import annotations

import apsw


def replace(conn: apsw.Connection, ws_id: int, doc_id: int, keys: list[str], targets: list[str],
            new: bool = False) -> None:
    """The document's keys and links are now these (``new``: it had none)."""
    if not new:
        delete(conn, doc_id)
    conn.executemany("INSERT OR IGNORE INTO doc_keys(ws_id, key, doc_id) VALUES (?,?,?)",
                     [(ws_id, key, doc_id) for key in keys])
    conn.executemany("INSERT INTO links(ws_id, src_doc_id, target_key) VALUES (?,?,?)",
                     [(ws_id, doc_id, key) for key in targets])


def delete(conn: apsw.Connection, doc_id: int) -> None:
    conn.execute("DELETE FROM doc_keys WHERE doc_id = ?", (doc_id,))
    conn.execute("DELETE FROM links WHERE src_doc_id = ?", (doc_id,))


def remove_workspace(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute("DELETE FROM doc_keys WHERE ws_id = ?", (ws_id,))
    conn.execute("DELETE FROM links WHERE ws_id = ?", (ws_id,))


def key_documents(conn: apsw.Connection, ws_id: int) -> dict[str, list[int]]:
    """Each key, with the documents that have it in the table's order."""
    found: dict[str, list[int]] = {}
    for key, doc_id in conn.execute("SELECT key, doc_id FROM doc_keys WHERE ws_id = ?", (ws_id,)):
        found.setdefault(key, []).append(doc_id)
    return found


def all_links(conn: apsw.Connection, ws_id: int) -> list[tuple[int, str]]:
    """(source document, target key) of every link."""
    return conn.execute("SELECT src_doc_id, target_key FROM links WHERE ws_id = ?", (ws_id,)).fetchall()


def keys_and_targets(conn: apsw.Connection, doc_id: int) -> tuple[list[str], list[str]]:
    """The document's keys and the keys it links to, each sorted."""
    keys = sorted(r[0] for r in conn.execute("SELECT key FROM doc_keys WHERE doc_id = ?", (doc_id,)))
    targets = sorted(r[0] for r in conn.execute("SELECT target_key FROM links WHERE src_doc_id = ?", (doc_id,)))
    return keys, targets


_OUTGOING = """
SELECT (SELECT MIN(k.doc_id) FROM doc_keys k WHERE k.ws_id = l.ws_id AND k.key = l.target_key)
FROM links l WHERE l.src_doc_id = ?
"""
_INCOMING = """
SELECT l.src_doc_id FROM doc_keys own JOIN links l ON l.ws_id = own.ws_id AND l.target_key = own.key
WHERE own.doc_id = ? AND own.doc_id = (SELECT MIN(k.doc_id) FROM doc_keys k WHERE k.ws_id = own.ws_id
                                       AND k.key = own.key)
"""


def linked_to(conn: apsw.Connection, doc_id: int) -> list[int | None]:
    """The document each of this one's links names (None for a key no document has)."""
    return [target for (target,) in conn.execute(_OUTGOING, (doc_id,))]


def linking_to(conn: apsw.Connection, doc_id: int) -> list[int]:
    """The documents with a link naming this one."""
    return [source for (source,) in conn.execute(_INCOMING, (doc_id,))]
