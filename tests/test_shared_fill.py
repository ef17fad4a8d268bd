"""Several editors on one database: the process that fills keeps the fill and the writer lease while it fills;
the others search and scan (a scan that changes nothing needs no lease), and wait. Three real engine processes
(``tests.workers editor``) on one SQLite file, each scanning as an editor does, the toy TEI server embedding.

Before the fill was claimed in the lease file, every scan of another editor took the lease between two
batches and that editor's filler went on with the fill: the fill moved at nearly every scan (about 12
times in 90 s with three editors on the RFCs) and ran at half one editor's pace."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from autodoc_core.service.engine import Engine
from autodoc_core.store.lease import WriterLease
from tests.conftest import PROJECT, wait_until, write
from tests.lease_file import lease_record
from tests.model_servers import Behaviour, model_server

NOTES, PARTS = 60, 6


def events(log: Path) -> list[tuple[str, int]]:
    if not log.exists():
        return []
    return [(kind, int(pid)) for kind, pid, _ in (line.split() for line in log.read_text().splitlines() if line)]


def batch_times(log: Path) -> list[float]:
    return [float(at) for kind, _, at in (line.split() for line in log.read_text().splitlines() if line)
            if kind == "batch"]


class LeaseWatch(threading.Thread):
    """The lease file's holder, read again and again (the time and pid of each read that names one)."""

    def __init__(self, db: Path) -> None:
        super().__init__(daemon=True)
        self.db, self.stop, self.holders = db, threading.Event(), []

    def run(self) -> None:
        while not self.stop.wait(0.01):  # a sampling period, not a wait for a state
            holder = lease_record(self.db).get("holder")
            if holder:
                self.holders.append((time.time(), holder["pid"]))


def fill_moves(batches: list[int]) -> int:
    """How many times the process storing the next batch was not the one that stored the one before."""
    return sum(1 for before, after in zip(batches, batches[1:], strict=False) if before != after)


def test_the_editor_that_fills_keeps_the_fill_while_the_others_scan(tmp_path: Path, kb: Path) -> None:
    for i in range(NOTES):
        write(kb, f"n{i:02}.md", f"# Note {i}\n\n" + "".join(f"## Part {j}\n\nbread {i} flour {j}.\n\n"
                                                           for j in range(PARTS)))
    an_hour_ago = time.time() - 3600
    for note in kb.iterdir():  # notes written long before the editors open (a file written just now is re-read)
        os.utime(note, (an_hour_ago, an_hour_ago))
    db, log = tmp_path / "a.db", tmp_path / "events.log"
    with model_server("tei", Behaviour(delay=0.05, hold_after=3)) as server:
        with Engine(db) as setup:
            setup.workspace_add("kb", str(kb))
            setup.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url, "batch_size": 8}})
            setup.workspace_index("kb")
        editors = [subprocess.Popen([sys.executable, "-m", "tests.workers", "editor", str(db), str(log), "0.2"],
                                    cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                   for _ in range(3)]
        watch = LeaseWatch(db)
        watch.start()
        try:
            # The filler's fourth batch is held at the server: the fill is under way, whatever the machine's pace.
            assert server.behaviour.holding.wait(timeout=120)
            held_at = len(events(log))
            filler = next(pid for kind, pid in events(log) if kind == "batch")
            others = {editor.pid for editor in editors} - {filler}

            def others_scanned_or_wait() -> bool:
                scanned = {pid for kind, pid in events(log)[held_at:] if kind == "scan"}
                waiting = {w["pid"] for w in lease_record(db).get("wanted", {}).values()}
                return others <= scanned | waiting

            wait_until(others_scanned_or_wait, timeout=120, what="the other editors to scan, or wait to, mid-fill")
            server.behaviour.release.set()
            with Engine(db) as reader:
                wait_until(lambda: reader.workspace_status("kb")["semantic"] == "ready", timeout=300,
                           what="the fill to complete", every=0.2)
            # The last batch's commit makes it ready; the filler then finds nothing missing and ends its claim.
            wait_until(lambda: "filler" not in lease_record(db), what="the filler to end its claim on the fill")
        finally:
            watch.stop.set()
            for editor in editors:
                editor.kill()
                editor.wait(timeout=30)
    seen = events(log)
    batches = [pid for kind, pid in seen if kind == "batch"]
    first, last = seen.index(("batch", batches[0])), len(seen) - seen[::-1].index(("batch", batches[-1]))
    scans_during = {pid for kind, pid in seen[first:last] if kind == "scan"} - {batches[0]}
    assert len(scans_during) == 2, f"the other editors did not scan while the fill ran: {seen}"  # else proves nothing
    assert fill_moves(batches) == 0, f"the fill moved between processes: {batches}"
    times = batch_times(log)
    during = [pid for at, pid in watch.holders if times[0] <= at <= times[-1]]
    assert during and fill_moves(during) == 0, f"the lease changed hands during the fill: {fill_moves(during)} times"


def test_a_scan_while_another_process_fills_writes_only_what_changed(tmp_path: Path, kb: Path) -> None:
    """A scan that finds every file as indexed leaves the filling process its lease (no write, no lease taken);
    one that finds a changed file still indexes it, waiting for the lease as before."""
    for i in range(5):
        write(kb, f"n{i}.md", f"# Note {i}\n\nbread {i}.\n")
        os.utime(kb / f"n{i}.md", (time.time() - 3600, time.time() - 3600))
    db = tmp_path / "a.db"
    with Engine(db) as editor:
        editor.workspace_add("kb", str(kb))
        editor.workspace_configure("kb", {"embedder": {"provider": "none"}})
        editor.workspace_index("kb")
        editor.store.lease.release()
        filler = WriterLease(db)  # another process's claim on the fill (another token: another process to the lease)
        assert filler.claim_fill()
        try:
            indexed_at = editor.workspace_status("kb")["indexed_at"]
            quiet = editor.workspace_index("kb")
            assert (quiet["scanned"], quiet["unchanged"]) == (5, 5) and not editor.store.lease.held
            assert editor.workspace_status("kb")["indexed_at"] == indexed_at  # nothing written
            write(kb, "n2.md", "# Note 2\n\nbread and flour.\n")
            changed = editor.workspace_index("kb")
            assert changed["changed"] == 1 and editor.store.lease.held
            assert editor.search_query("kb", "flour").to_wire()["hits"][0]["path"] == "n2.md"
        finally:
            filler.end_fill()
            filler.close()
