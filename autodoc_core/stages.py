"""The names of a search's stages, as ``stages.requested``/``performed``/``skipped``/``pending`` and a hit's
``via`` spell them (lua/autodoc/stages.lua holds the same list for the editor)."""

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
