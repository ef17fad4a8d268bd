"""Related sections: what else the knowledge base says about a section, or about a document as a whole.
sections (the stages, from locating the source to the answer), word_search (its lexical stage: the source's
most distinctive words, searched as a query)."""

from autodoc_core.related.sections import Elsewhere, Source, locate, run_related, run_related_elsewhere, source_vector

__all__ = ["Elsewhere", "Source", "locate", "run_related", "run_related_elsewhere", "source_vector"]
