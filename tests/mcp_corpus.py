"""The notes the MCP tests (stdio and HTTP) serve, and how a test registers them (not a test module)."""

from __future__ import annotations

from pathlib import Path

from autodoc_core.service.engine import Engine

NOTES = """\
---
title: Storage notes
tags: [storage]
---
# Storage

We keep the gecko index in SQLite.

## Write-ahead log

The write-ahead log lets readers see one snapshot
while a writer commits; geckos never wait.

## Backups

Copy the file with the online backup API.
"""

NETWORK = """\
# Network

## Transport

Gecko replicas talk HTTP/2 to each other.
A second line about the transport.
"""


def setup_workspace(db: Path, name: str, root: Path, embedder: str = "none", index: bool = True) -> None:
    """Register (and index) a folder with an engine that is closed again, so the server starts alone."""
    with Engine(db) as engine:
        engine.workspace_add(name, str(root))
        engine.workspace_configure(name, {"embedder": embedder})
        if index:
            engine.workspace_index(name)


def file_lines(path: Path, first: int, last: int) -> str:
    return "\n".join(path.read_text(encoding="utf-8").splitlines()[first - 1 : last])
