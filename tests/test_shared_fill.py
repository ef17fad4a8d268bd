"""Several editors on one database: the process that fills keeps the fill while it fills; the others
search, scan and write between its batches, and wait. Three real engine processes (``tests.workers
editor``) on one SQLite file, each scanning as an editor does, the toy TEI server embedding.

Before the fill was claimed in the lease file, every scan of another editor took the lease between two
batches and that editor's filler went on with the fill: the fill moved at nearly every scan (about 12
times in 90 s with three editors on the RFCs) and ran at half one editor's pace."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from autodoc_core.service.engine import Engine
from tests.conftest import PROJECT, wait_until, write
from tests.lease_file import lease_record
from tests.model_servers import Behaviour, model_server

NOTES, PARTS = 60, 6


def events(log: Path) -> list[tuple[str, int]]:
    if not log.exists():
        return []
    return [(kind, int(pid)) for kind, pid, _ in (line.split() for line in log.read_text().splitlines() if line)]


def fill_moves(batches: list[int]) -> int:
    """How many times the process storing the next batch was not the one that stored the one before."""
    return sum(1 for before, after in zip(batches, batches[1:], strict=False) if before != after)


def test_the_editor_that_fills_keeps_the_fill_while_the_others_scan(tmp_path: Path, kb: Path) -> None:
    for i in range(NOTES):
        write(kb, f"n{i:02}.md", f"# Note {i}\n\n" + "".join(f"## Part {j}\n\nbread {i} flour {j}.\n\n"
                                                           for j in range(PARTS)))
    db, log = tmp_path / "a.db", tmp_path / "events.log"
    with model_server("tei", Behaviour(delay=0.05)) as server:
        with Engine(db) as setup:
            setup.workspace_add("kb", str(kb))
            setup.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url, "batch_size": 8}})
            setup.workspace_index("kb")
        editors = [subprocess.Popen([sys.executable, "-m", "tests.workers", "editor", str(db), str(log), "0.2"],
                                    cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                   for _ in range(3)]
        try:
            with Engine(db) as reader:
                wait_until(lambda: reader.workspace_status("kb")["semantic"] == "ready", timeout=300,
                           what="the fill to complete", every=0.2)
            # The last batch's commit makes it ready; the filler then finds nothing missing and ends its claim.
            wait_until(lambda: "filler" not in lease_record(db), what="the filler to end its claim on the fill")
        finally:
            for editor in editors:
                editor.kill()
                editor.wait(timeout=30)
    seen = events(log)
    batches = [pid for kind, pid in seen if kind == "batch"]
    first, last = seen.index(("batch", batches[0])), len(seen) - seen[::-1].index(("batch", batches[-1]))
    scans_during = {pid for kind, pid in seen[first:last] if kind == "scan"} - {batches[0]}
    assert len(scans_during) == 2, f"the other editors did not scan while the fill ran: {seen}"  # else proves nothing
    assert fill_moves(batches) == 0, f"the fill moved between processes: {batches}"
