"""Three notes on three subjects and the toy TEI embedder the semantic tests share (not a test module)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import write


def notes(kb: Path) -> None:
    write(kb, "storage.md", "# Storage\n\n## Decision\n\nWe keep the index in an embedded relational database file.\n")
    write(kb, "network.md", "# Network\n\n## Sockets\n\nPackets travel over sockets between hosts.\n")
    write(kb, "cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")


def tei_config(url: str) -> dict:
    # A search waits up to 60 s for the query's vector (the default 2 s can pass on a starved machine);
    # the tests of the deadline itself set their own.
    return {"embedder": {"provider": "tei", "url": url, "retries": 0, "timeout": 5}, "semantic_deadline": 60}


def embed_with_tei(engine, kb: Path, url: str, **settings) -> dict:
    """Add the kb folder with the toy TEI server as its embedder and fill every vector."""
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {**tei_config(url), **settings})
    return engine.workspace_index("kb", {"wait": "semantic"})
