"""Model clients: the shared HTTP plumbing, deadlines and metering (``base``, ``http``), the
in-process MiniLM (``minilm``), the embedding providers (local, TEI, OpenAI-compatible, Cohere) and
the re-ranking providers (TEI, Cohere-compatible).
"""
