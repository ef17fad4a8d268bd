"""The databases the picker benchmark measures on: a corpus indexed with part of its vectors embedded, kept
between runs, and copied for each process that opens it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path


def half_filled_database(db: Path, kb: Path, fraction: float, workspace: str = "techdocs") -> dict:
    """The corpus indexed and `fraction` of its chunk texts embedded with the default local model."""
    from autodoc_core.index.vectors import Progress, fill
    from autodoc_core.service.engine import Engine

    with Engine(db) as engine:
        engine.workspace_add(workspace, str(kb))
        engine.workspace_index(workspace)
        ws = engine._workspace(workspace)
        progress = Progress()
        fill(engine.store, ws.id, engine._semantic.of(ws).embedder(ws), progress,
             stop=lambda: progress.total > 0 and progress.embedded >= progress.total * fraction)
        return engine.workspace_status(workspace)["embedder"]


def copy_database(source: Path, target: Path) -> Path:
    """A copy of the database with its WAL; a target's own WAL from an earlier run (--keep) is removed first:
    SQLite would apply its frames to the new copy."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", f"{target}{suffix}")
    return target


def prepare(name: str, kb: Path, work: Path, fraction: float) -> tuple[Path, str]:
    """The corpus's half-embedded database (kept in `work` for later runs) and how it came to be."""
    prepared = work / f"{name}-half.db"
    if prepared.exists():
        return prepared, "prepared earlier"
    started = time.perf_counter()
    half_filled_database(prepared, kb, fraction, name)
    return prepared, f"{time.perf_counter() - started:.0f} s to prepare"


def vector_counts(prepared: Path, workspace: str) -> dict:
    from autodoc_core.service.engine import Engine

    with Engine(prepared) as engine:
        return engine.workspace_status(workspace)["embedder"]
