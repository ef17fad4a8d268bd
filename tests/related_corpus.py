"""The small knowledge base the related-sections tests share, and the calls they make (not a test module)."""

from __future__ import annotations

from pathlib import Path

from autodoc_core.service.engine import Engine
from tests.conftest import write

STORAGE = """\
---
status: accepted
---
# Storage

## Decision

We keep the index in an embedded relational database file, with a write-ahead log so that
readers see one snapshot while a writer commits.

## Backups

Copy the file with the online backup API while the gecko service runs.
"""

DATABASE = """\
# Choosing a datastore

## Options

An SQL engine linked into the process, storing tables in one local file, and journaling
changes before applying them, lets queries keep reading a consistent view during updates.
"""

COOKING = """\
---
status: accepted
---
# Cooking

## Bread

Flour, water, salt and yeast make bread; knead it and let it rise overnight.
"""

GECKO = """\
---
status: draft
---
# Gecko service

## Operations

The gecko service keeps its gecko replicas in a quorum; gecko replicas vote on every commit.
"""


def related(engine: Engine, path: str, **opts) -> dict:
    return engine.search_related("kb", path, opts).to_wire()


def notes(kb: Path) -> None:
    write(kb, "storage.md", STORAGE)
    write(kb, "database.md", DATABASE)
    write(kb, "cooking.md", COOKING)
    write(kb, "gecko.md", GECKO)
    for name, words in [("garden", "Tomatoes need sun and water."), ("music", "A fugue repeats its subject."),
                        ("travel", "Trains leave the station at noon."), ("chess", "A knight moves in an L.")]:
        write(kb, f"{name}.md", f"# {name.title()}\n\n{words}\n")  # no word in common: a corpus, not a handful


def lexical_workspace(engine: Engine, kb: Path) -> None:
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    engine.workspace_index("kb")
