"""The MCP server's scan (service/scanner.py): it follows the files, never waits for another writer, and says a
lasting fault once."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from autodoc_core.errors import BUSY, AutodocError
from autodoc_core.service.engine import Engine
from autodoc_core.service.scanner import Scanner
from tests.conftest import paths, search, write


@pytest.fixture
def scanner(engine: Engine):
    instance = Scanner(engine, interval=3600)  # one round at start; the tests call scan_once themselves
    yield instance
    instance.close()


def test_a_round_indexes_what_changed(engine: Engine, kb: Path, indexed, scanner: Scanner) -> None:
    write(kb, "a.md", "# A\n\nfirst words\n")
    indexed()
    write(kb, "b.md", "# B\n\nzorblax\n")
    scanner.scan_once()
    assert paths(search(engine, "zorblax")) == ["b.md"]


def test_a_round_skips_while_another_process_writes(engine: Engine, kb: Path, indexed, tmp_path: Path,
                                                    scanner: Scanner) -> None:
    """It waited for the lease (up to 120 s, queueing before an editor's next run, whose background fill then
    stopped); a round is skipped at once instead, and the next one indexes."""
    indexed()
    write(kb, "b.md", "# B\n\nzorblax\n")
    other = Engine(tmp_path / "autodoc.db")
    try:
        with other.store.exclusive():
            with pytest.raises(AutodocError) as caught:
                engine.workspace_index("kb", lease_wait=0)
            assert caught.value.code == BUSY
            scanner.scan_once()  # returns at once: no wait, no error
            assert paths(search(engine, "zorblax")) == []
    finally:
        other.close()
    scanner.scan_once()
    assert paths(search(engine, "zorblax")) == ["b.md"]


def test_a_root_not_mounted_is_said_once(engine: Engine, kb: Path, indexed, scanner: Scanner,
                                         caplog: pytest.LogCaptureFixture) -> None:
    write(kb, "a.md", "# A\n\nwords\n")
    indexed()
    shutil.rmtree(kb)
    kb.mkdir()  # an empty mount point
    with caplog.at_level(logging.WARNING, logger="autodoc_core.service.scanner"):
        for _ in range(3):
            scanner.scan_once()
    said = [r.getMessage() for r in caplog.records if "scanning kb" in r.getMessage()]
    assert len(said) == 1 and "is empty but the index holds 1 documents" in said[0]
    assert paths(search(engine, "words")) == ["a.md"]  # nothing lost
