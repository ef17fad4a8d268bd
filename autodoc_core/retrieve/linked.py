"""The link graph around one document: the documents it links to and those linking to it.

A link's target is a key (a path, a file name, a title, an alias); as in ``index.links.resolve_links``,
a key several documents share names the first of them.
"""

from __future__ import annotations

import apsw

_OUTGOING = """
SELECT (SELECT MIN(k.doc_id) FROM doc_keys k WHERE k.ws_id = l.ws_id AND k.key = l.target_key)
FROM links l WHERE l.src_doc_id = ?
"""
_INCOMING = """
SELECT l.src_doc_id FROM doc_keys own JOIN links l ON l.ws_id = own.ws_id AND l.target_key = own.key
WHERE own.doc_id = ? AND own.doc_id = (SELECT MIN(k.doc_id) FROM doc_keys k WHERE k.ws_id = own.ws_id
                                       AND k.key = own.key)
"""


def linked_documents(conn: apsw.Connection, doc_id: int) -> dict[int, int]:
    """The other documents linked with this one, each with how: 1 it links to them, 2 they link to it,
    3 both."""
    found: dict[int, int] = {}
    for (target,) in conn.execute(_OUTGOING, (doc_id,)):
        if target is not None and target != doc_id:
            found[target] = found.get(target, 0) | 1
    for (source,) in conn.execute(_INCOMING, (doc_id,)):
        if source != doc_id:
            found[source] = found.get(source, 0) | 2
    return found
