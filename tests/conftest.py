"""Shared fixtures: real files in temporary folders and an engine on a real SQLite file."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from autodoc_core.engine import Engine

PROJECT = Path(__file__).resolve().parents[1]


def write(root: Path, relpath: str, text: str | bytes) -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    return root


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    instance = Engine(tmp_path / "autodoc.db")
    yield instance
    instance.close()


@pytest.fixture
def indexed(engine: Engine, kb: Path) -> Callable[..., dict]:
    """Add the kb folder as workspace "kb" (once) and index it; returns the index report."""

    def run(**opts) -> dict:
        engine.workspace_add("kb", str(kb))
        return engine.workspace_index("kb", opts or None)

    return run


def database_bytes(folder: Path) -> bytes:
    """Everything the engine wrote to disk in ``folder``: the database, its WAL and the lease file."""
    return b"".join(p.read_bytes() for p in folder.glob("autodoc.db*"))


def search(engine: Engine, query: str, **opts) -> dict:
    return engine.search_query("kb", query, opts)


def paths(answer: dict) -> list[str]:
    return [hit["path"] for hit in answer["hits"]]
