"""The rerank stage: a cross-encoder re-sorts the first hits; a ranker that fails or misses its
deadline leaves them in their fused order."""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from autodoc_core.providers.base import within_deadline
from autodoc_core.providers.http import ProviderError
from autodoc_core.providers.rankers import Ranker
from autodoc_core.rank.hits import Hit, bodies


@dataclass
class Reranked:
    hits: list[Hit]
    failure: str | None = None  # why the ranker gave no scores; the hits keep their fused order


def rerank(conn: apsw.Connection, hits: list[Hit], query_text: str, ranker: Ranker, deadline: float) -> Reranked:
    """Re-sort the first ``ranker.window`` hits by the ranker's scores; the rest follow in their order."""
    window = hits[: ranker.window]
    if not window:
        return Reranked(hits)
    texts_by_chunk = bodies(conn, [h.chunk_id for h in window if h.chunk_id is not None])
    texts = [f"{h.breadcrumb}\n{texts_by_chunk.get(h.chunk_id, '')}".strip() for h in window]
    try:
        scores = within_deadline(lambda: ranker.scores(query_text, texts), deadline, "the ranker")
    except ProviderError as exc:
        return Reranked(hits, exc.reason)
    ranked = sorted((hit.ranked(score) for hit, score in zip(window, scores, strict=True)),
                    key=lambda h: -(h.rank_score or 0.0))
    return Reranked(ranked + hits[ranker.window :])
