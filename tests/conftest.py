"""Shared fixtures: real files in temporary folders and an engine on a real SQLite file."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from autodoc_core.service.engine import Engine
from tests.waiting import wait_until, wait_until_async  # noqa: F401  (the tests import them from here)

PROJECT = Path(__file__).resolve().parents[1]
# The local encoder's ONNX graph (90 MB) is cached in the project's .pytest_cache, not in the user's
# data folder; set before any test starts a child process, so the children share it.
os.environ.setdefault("AUTODOC_ONNX_CACHE", str(PROJECT / ".pytest_cache" / "autodoc-onnx"))


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model servers are on 127.0.0.1: a CI runner's proxy variables would send their requests
    (urllib, httpx, and every child process) to the proxy instead."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


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
def notes(kb: Path) -> Path:
    """Two notes: an ADR about the index's store, and one about bread (the Neovim tests search them)."""
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "We keep every workspace in one embedded relational store.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    return kb


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
    return engine.search_query("kb", query, opts).to_wire()


def paths(answer: dict) -> list[str]:
    return [hit["path"] for hit in answer["hits"]]


class LineReader:
    """Lines from a child's pipe with a deadline: a child that hangs fails the test instead of
    blocking it in ``readline()``."""

    def __init__(self, stream: IO[Any]) -> None:
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[Any]) -> None:
        while line := stream.readline():
            self._lines.put(line)
        self._lines.put(None)

    def next(self, timeout: float = 60) -> Any:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line from the child within {timeout} s") from None
        if line is None:
            raise AssertionError("the child closed its output")
        return line


def autodoc(db: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autodoc_core", "--db", str(db), *args],
        input=stdin, capture_output=True, cwd=PROJECT, timeout=60,
    )


def call(db: Path, method: str, params: list) -> tuple[int, object]:
    done = autodoc(db, "--call", method, json.dumps(params))
    return done.returncode, json.loads(done.stdout)


class StdioServer:
    """``autodoc serve --stdio`` with replies read under a deadline."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "autodoc_core", "--db", str(db), "serve", "--stdio"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=PROJECT)
        self.lines = LineReader(self.proc.stdout)
        self.next_id = 0

    def ask(self, method: str, params: list) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        answer = json.loads(self.lines.next(timeout=120))
        assert answer["id"] == self.next_id
        return answer

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture
def nvim(tmp_path: Path, kb: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A child Neovim on tests/nvim/minimal_init.lua over a two-note workspace ``kb`` (tests.nvim.plugin)."""
    from tests.nvim.plugin import plugin_nvim  # tests.nvim imports this module: imported when first used

    with plugin_nvim(tmp_path, kb, monkeypatch) as instance:
        yield instance
