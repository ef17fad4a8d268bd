"""Links between documents: inbound link counts (the authority boost) and each superseded
document's successor, resolved over the whole workspace after a run that changed any of them."""

from __future__ import annotations

import json
from collections import Counter

import apsw

from autodoc_core.parse.document import reference_key_sets
from autodoc_core.store import documents, links


def resolve_links(conn: apsw.Connection, ws_id: int) -> None:
    """Recount inbound links and find each superseded document's successor."""
    key_docs = links.key_documents(conn, ws_id)
    inbound: Counter[int] = Counter()
    sources: dict[int, set[int]] = {}
    for src, key in links.all_links(conn, ws_id):
        for target in key_docs.get(key, ())[:1]:
            if target != src:
                sources.setdefault(target, set()).add(src)
    inbound.update({doc: len(srcs) for doc, srcs in sources.items()})

    docs = documents.for_link_resolution(conn, ws_id)
    successor: dict[int, int] = {}
    for doc_id, path, supersedes, superseded_by, _inbound, _succ in docs:
        for keys in reference_key_sets(json.loads(superseded_by), path):
            target = _first(key_docs, keys)
            if target is not None and target != doc_id:
                successor.setdefault(doc_id, target)
                break
        for keys in reference_key_sets(json.loads(supersedes), path):
            target = _first(key_docs, keys)
            if target is not None and target != doc_id:
                successor.setdefault(target, doc_id)
    for doc_id, _path, _s, _sb, old_inbound, old_successor in docs:
        new_inbound, new_successor = inbound.get(doc_id, 0), successor.get(doc_id)
        if (old_inbound, old_successor) != (new_inbound, new_successor):
            documents.set_links(conn, doc_id, new_inbound, new_successor)


def link_signature(conn: apsw.Connection, doc_id: int) -> tuple:
    """What link resolution reads of one document: its keys, its links, its supersession."""
    keys, targets = links.keys_and_targets(conn, doc_id)
    return keys, targets, documents.supersession(conn, doc_id)


def _first(key_docs: dict[str, list[int]], keys: list[str]) -> int | None:
    for key in keys:
        if key in key_docs:
            return key_docs[key][0]
    return None
