"""The SQL that facets, folder prefixes and the abstract switch add to every retriever's query."""

from __future__ import annotations

import apsw
import numpy as np

from autodoc_core.parse.frontmatter import with_folded
from autodoc_core.retrieve.lexical import Filters
from autodoc_core.retrieve.query import FacetFilter

ABSTRACT_CLAUSE = "c.kind <> 'abstract'"  # abstracts left out (the default)


def build_filters(facets: list[FacetFilter], paths: list[str], abstract_chunk: bool, ws_id: int) -> Filters:
    filters = Filters()
    by_field: dict[tuple[str, bool], list[str]] = {}
    for facet in facets:
        values = by_field.setdefault((facet.field, facet.negated), [])
        values.extend(with_folded([facet.value]) if isinstance(facet.value, str) else [facet.value])
    for (name, negated), values in by_field.items():
        marks = ", ".join("?" * len(values))
        clause = f"d.id {'NOT ' if negated else ''}IN (SELECT doc_id FROM facets WHERE ws_id = ? AND field = ? " \
                 f"AND value IN ({marks}))"
        filters.clauses.append(clause)
        filters.params.extend([ws_id, name, *values])
    if paths:
        filters.clauses.append("(" + " OR ".join("d.path = ? OR substr(d.path, 1, ?) = ?" for _ in paths) + ")")
        for prefix in paths:
            filters.params.extend([prefix, len(prefix) + 1, prefix + "/"])
    if not abstract_chunk:
        filters.clauses.append(ABSTRACT_CLAUSE)
    return filters


def allowed_documents(conn: apsw.Connection, ws_id: int, filters: Filters) -> np.ndarray | None:
    """Document ids passing the document-level filters, or None when nothing filters."""
    clauses = [c for c in filters.clauses if not c.startswith("c.")]
    if not clauses:
        return None
    sql = "SELECT d.id FROM documents d WHERE d.ws_id = ?" + "".join(f" AND {c}" for c in clauses)
    return np.array([r[0] for r in conn.execute(sql, (ws_id, *filters.params))], dtype=np.int64)
