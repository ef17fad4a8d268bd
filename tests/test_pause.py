"""``embedding.pause`` is kept in the database: a host killed while paused, and any process started on the same
file after it, leaves the vectors alone until someone resumes. Real ``serve --stdio`` processes, the toy TEI
server."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.conftest import StdioServer, wait_until, write
from tests.model_servers import Behaviour, model_server


def test_a_pause_outlives_a_killed_host_until_resumed(tmp_path: Path, kb: Path) -> None:
    for i in range(6):
        write(kb, f"n{i}.md", f"# Note {i}\n\nFlour, water, salt and yeast make bread number {i}.\n")
    db = tmp_path / "a.db"
    with model_server("tei", Behaviour(hold_after=1)) as server:
        first = StdioServer(db)
        first.ask("workspace.add", ["kb", str(kb)])
        embedder = {"provider": "tei", "url": server.url, "batch_size": 2, "timeout": 120}
        first.ask("workspace.configure", ["kb", {"embedder": embedder}])
        first.ask("workspace.index", ["kb"])
        assert server.behaviour.holding.wait(timeout=60)  # the first batch stored, the second held
        assert first.ask("embedding.pause", [])["result"] == {"paused": True}
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=30)

        second = StdioServer(db)
        try:
            def status() -> dict:
                return second.ask("workspace.status", ["kb"])["result"]

            # Before the ask: its wake can start the filler's look before the answer comes (a look missed that way
            # leaves the filler asleep for a minute), and the host has no filler before it.
            asked_at = time.time()
            second.ask("workspace.index", ["kb"])  # starts its background filler, and wakes it
            wait_until(lambda: (filler := status()["filler"])["looked_at"] > asked_at and filler["state"] == "paused",
                       what="the new host's filler to look and find the fill paused")
            held = server.behaviour.held
            paused = status()
            assert paused["embedding_paused"] is True and paused["embedder"]["embedded"] == 2
            assert paused["semantic"] == "partial"
            server.behaviour.release.set()  # nothing is held for the new host: it sent no batch
            assert second.ask("embedding.resume", [])["result"] == {"paused": False}
            wait_until(lambda: status()["semantic"] == "ready", timeout=120, what="the resumed fill to finish")
            assert status()["embedding_paused"] is False and held == 1
        finally:
            second.close()
