"""The link graph around one document: the documents it links to and those linking to it.

A link's target is a key (a path, a file name, a title, an alias); as in ``index.links.resolve_links``,
a key several documents share names the first of them.
"""

from __future__ import annotations

import apsw

from autodoc_core.store import links


def linked_documents(conn: apsw.Connection, doc_id: int) -> dict[int, int]:
    """The other documents linked with this one, each with how: 1 it links to them, 2 they link to it,
    3 both."""
    found: dict[int, int] = {}
    for target in links.linked_to(conn, doc_id):
        if target is not None and target != doc_id:
            found[target] = found.get(target, 0) | 1
    for source in links.linking_to(conn, doc_id):
        if source != doc_id:
            found[source] = found.get(source, 0) | 2
    return found
