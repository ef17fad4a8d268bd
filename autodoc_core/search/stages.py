"""The names of a search's stages, as ``stages.requested``/``performed``/``skipped``/``pending`` and a hit's
``via`` spell them, and ``Candidates``, the record each retriever hands to fusion. The ones a caller can ask
for are ``retrieve.options.STAGES`` (lua/autodoc/stages.lua lists the same for the editor)."""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class Stage(StrEnum):
    LEXICAL = "lexical"  # the word search (FTS5, BM25)
    SYMBOL = "symbol"  # identifier-shaped queries: the symbols table
    SEMANTIC = "semantic"  # nearest vectors
    LINK = "link"  # related sections: the link graph
    FACET = "facet"  # a query of facets alone: the documents that have them
    RERANK = "rerank"  # the cross-encoder
    # boundaries a streamed search can stop before (SearchCancelled.stage), not retrievers
    FUSE = "fuse"
    SHAPE = "shape"


RETRIEVERS = (Stage.LEXICAL, Stage.SEMANTIC)  # the ones ``mode_used`` names


@dataclass(frozen=True)
class Candidates:
    """What one retriever hands on: its chunk ids, best first, and the score each was ranked by (lexical: BM25;
    semantic: the cosine, also for the other retrievers' candidates where the blend needs it on both scales;
    symbol and link: none)."""

    chunk_ids: list[int]
    scores: Mapping[int, float] = field(default_factory=dict)

    def kept(self, chunk_ids: Container[int]) -> Candidates:
        """The same candidates, less those not in ``chunk_ids`` (the scores stay)."""
        return Candidates([c for c in self.chunk_ids if c in chunk_ids], self.scores)


def scores_of(found: Mapping[str, Candidates], stage: Stage) -> Mapping[int, float]:
    """The scores ``stage`` gave its candidates; none when it did not run."""
    return found[stage].scores if stage in found else {}
