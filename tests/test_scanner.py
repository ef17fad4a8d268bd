"""The MCP server's scan (service/scanner.py): it follows the files, never waits for another writer, and says a
lasting fault once."""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path

import pytest

from autodoc_core.errors import BUSY, AutodocError
from autodoc_core.service.engine import Engine
from autodoc_core.service.scanner import Scanner
from tests.conftest import paths, search, wait_until, write
from tests.lease_file import lease_record


class ObservedScanner(Scanner):
    """The scanner, with an event set after each round (this test's hook, not the product's)."""

    def __init__(self, engine: Engine, interval: float) -> None:
        self.round_ended = threading.Event()
        super().__init__(engine, interval)

    def scan_once(self) -> None:
        try:
            super().scan_once()
        finally:
            self.round_ended.set()


@pytest.fixture
def scanner(engine: Engine):
    instance = ObservedScanner(engine, interval=3600)  # one round at start; the tests call scan_once themselves
    # The round at start must be over before a test writes a file: run late (both cores busy), it indexed
    # the file a test expected no round to see.
    wait_until(instance.round_ended.is_set, what="the scanner's round at start")
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


def test_a_round_a_search_asked_for_waits_for_the_lease(engine: Engine, kb: Path, indexed, tmp_path: Path,
                                                         scanner: Scanner) -> None:
    """Another process filling vectors for hours holds the lease but hands it over between batches to a
    process that asks: a round that only took a free lease never ran, and the agent was told to search again
    in a few seconds. A round a search asked for asks for the lease, and gets it at the next hand-over."""
    indexed()
    write(kb, "b.md", "# B\n\nzorblax\n")
    other = Engine(tmp_path / "autodoc.db")
    batch_done = threading.Event()

    def one_batch() -> None:  # the other process's fill: one batch under the lease, then it lets go
        with other.store.exclusive():
            batch_done.wait(timeout=60)

    try:
        holder = threading.Thread(target=one_batch)
        holder.start()
        wait_until(lambda: (lease_record(tmp_path / "autodoc.db").get("holder") or {}).get("token")
                   == other.store.lease.token, what="the other process holding the lease")
        scanner.wake()
        wait_until(lambda: engine.store.lease.token in lease_record(tmp_path / "autodoc.db").get("wanted", {}),
                   what="the scanner asking for the lease")
        batch_done.set()
        holder.join(timeout=30)
        wait_until(lambda: paths(search(engine, "zorblax")) == ["b.md"], what="the asked-for round")
    finally:
        batch_done.set()
        other.close()


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
