"""The retrievers: query parsing, the lexical stage (FTS5 BM25 with facet filters), the
identifier (symbol) backstop, and the semantic stage's vector index (1-bit prefilter, float32
rescore).
"""
