"""Related sections: what else the knowledge base says about a section, or about a document as a whole.
sections (the stages, from locating the source to the answer), word_search (its lexical stage: the source's
most distinctive words, searched as a query)."""

from autodoc_core.related.sections import Source, run_related

__all__ = ["Source", "run_related"]
