"""Processes the multi-process tests start and kill: ``python -m tests.workers ROLE ARGS``."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from autodoc_core.index import checkpoints
from autodoc_core.service.engine import Engine
from autodoc_core.store.lease import WriterLease

PAUSE_FILE = "pause-next-round"  # beside the workspace: the index loop stops itself mid-way through its next run


def write_round(root: Path, files: int, round_no: int) -> None:
    """Every file's every section says which round wrote it."""
    for i in range(files):
        sections = "\n".join(f"## Part {j}\n\nmarker r{round_no} part{j} of note {i}.\n" for j in range(4))
        (root / f"note{i:03}.md").write_text(f"# Note {i}\n\n{sections}", encoding="utf-8")


def hold_lease(db: str) -> None:
    lease = WriterLease(Path(db))
    assert lease.try_acquire()
    print("held", flush=True)
    time.sleep(600)


def index_loop(db: str, root: str, files: str) -> None:
    """Rewrite and re-index the workspace forever, printing each finished round."""
    engine = Engine(db)
    engine.workspace_add("kb", root)
    engine.workspace_configure("kb", {"embedder": {"provider": "none"}})
    round_no = 0
    while True:
        round_no += 1
        if (Path(root).parent / PAUSE_FILE).exists():
            checkpoints.pause_after("index.document", int(files) // 2)
        write_round(Path(root), int(files), round_no)
        engine.workspace_index("kb")
        print(f"round {round_no}", flush=True)


def fill(db: str, workspace: str) -> None:
    """Embed the workspace's missing vectors in the foreground (the workspace and its embedder are set up)."""
    with Engine(db) as engine:
        print("filling", flush=True)
        engine.workspace_index(workspace, {"wait": "semantic"})
        print("filled", flush=True)


def editor(db: str, event_log: str, scan_seconds: str) -> None:
    """What an editor's host does on a shared database: fill in the background and scan every workspace every
    ``scan_seconds`` (an editor's scan_ms). Each batch of vectors this process stores and each scan appends a
    line (``batch PID TIME``, ``scan PID TIME``) to ``event_log``, so a test sees who did what, in order."""
    def log(event: str) -> None:
        with open(event_log, "a", encoding="utf-8") as handle:
            handle.write(f"{event} {os.getpid()} {time.time()}\n")

    reached = checkpoints.reached

    def logging_reached(name: str) -> None:
        if name == "embed.batch":
            log("batch")
        reached(name)

    checkpoints.reached = logging_reached
    with Engine(db) as engine:
        engine.start_background()
        print("started", flush=True)
        while True:
            for workspace in engine.workspace_list():
                engine.workspace_index(workspace["name"])
            log("scan")
            time.sleep(float(scan_seconds))  # an editor's scan interval, not a wait for a state


if __name__ == "__main__":
    roles = {"hold-lease": hold_lease, "index-loop": index_loop, "fill": fill, "editor": editor}
    roles[sys.argv[1]](*sys.argv[2:])
