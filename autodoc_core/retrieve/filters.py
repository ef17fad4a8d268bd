"""The clauses that facets, folder prefixes and the abstract switch add to every retriever's query."""

from __future__ import annotations

import apsw
import numpy as np

from autodoc_core.parse.frontmatter import with_folded
from autodoc_core.retrieve.query import FacetFilter
from autodoc_core.store import documents
from autodoc_core.store.filters import NOT_ABSTRACT, Filters, facet_clause, path_clause


def build_filters(facets: list[FacetFilter], paths: list[str], abstract_chunk: bool, ws_id: int) -> Filters:
    filters = Filters()
    by_field: dict[tuple[str, bool], list[str]] = {}
    for facet in facets:
        values = by_field.setdefault((facet.field, facet.negated), [])
        values.extend(with_folded([facet.value]) if isinstance(facet.value, str) else [facet.value])
    for (name, negated), values in by_field.items():
        filters.document.append(facet_clause(ws_id, name, values, negated))
    if paths:
        filters.document.append(path_clause(paths))
    if not abstract_chunk:
        filters.chunk.append(NOT_ABSTRACT)
    return filters


def allowed_documents(conn: apsw.Connection, ws_id: int, filters: Filters) -> np.ndarray | None:
    """Document ids passing the document-level filters, or None when nothing filters."""
    if not filters.document:
        return None
    return np.array(documents.passing(conn, ws_id, filters.document), dtype=np.int64)
