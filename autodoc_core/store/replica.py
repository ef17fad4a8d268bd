"""A read replica's file: a copy of a writer's database that Litestream keeps in step, never written here.

The mark is a sidecar, ``<db>.replica`` (JSON: the writer's replica URL), not a row or a pragma in the file:
the follower rewrites the file's pages from the writer's, so a mark inside it would be overwritten by the
writer's own pages, and writing one would be the very write a replica must not make. A process that opens a
marked file searches it and refuses every write, naming the writer's URL and how to make a writable copy.

Litestream's follower (``litestream restore -f``) writes the writer's pages into the file in place, under
SQLite's own exclusive lock, and keeps the file in rollback-journal mode; readers hold a shared lock only
while they read. A page the writer's transaction did not touch keeps the connection's cached copy, and
SQLite notices a new state only when page 1's change counter moves, which a WAL writer's commit does not
always do: so a reader compares the file's size and modification time at each read transaction (after its
shared lock, when no apply is under way) and opens a fresh connection when they moved.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autodoc_core.errors import UNSUPPORTED, AutodocError

MARK_SUFFIX = ".replica"
TXID_SUFFIX = "-txid"  # Litestream's follower writes the transaction it applied last there


@dataclass(frozen=True)
class ReplicaMark:
    db_path: Path
    url: str  # the writer's replica URL (file://, s3://, ...)


def mark_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + MARK_SUFFIX)


def read_mark(db_path: Path) -> ReplicaMark | None:
    try:
        record = json.loads(mark_path(db_path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        record = {}
    return ReplicaMark(db_path, str(record.get("replica_of") or "an unreadable URL (see " +
                                    str(mark_path(db_path)) + ")"))


def write_mark(db_path: Path, url: str) -> None:
    mark_path(db_path).write_text(json.dumps({"replica_of": url}) + "\n", encoding="utf-8")


def served_txid(db_path: Path) -> int | None:
    """The writer's transaction the file holds (Litestream's ``-txid`` sidecar, hexadecimal), None before one."""
    try:
        return int(db_path.with_name(db_path.name + TXID_SUFFIX).read_text(encoding="ascii").strip(), 16)
    except (OSError, ValueError):
        return None


def file_stamp(db_path: Path) -> tuple[int, int, int]:
    info = os.stat(db_path)
    return info.st_ino, info.st_size, info.st_mtime_ns


def restored_schema(path: Path) -> tuple[int | None, str | None]:
    """A freshly restored file's (schema version, "workspaces" when it has that table, else None); (None, the
    reason) when SQLite cannot read it."""
    import apsw

    try:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            named = conn.execute("SELECT name FROM sqlite_schema WHERE name = 'workspaces'").fetchone()
        finally:
            conn.close()
    except apsw.Error as exc:
        return None, str(exc)
    return version, named[0] if named else None


def refusal(mark: ReplicaMark) -> AutodocError:
    path = mark.db_path
    return AutodocError(
        UNSUPPORTED,
        f"{path} is a read replica of {mark.url}: it searches, and never writes (indexing happens on the writer). "
        f"To make a writable copy, restore one into a new file: litestream restore -o NEW.db {mark.url} "
        "(then use --db NEW.db)", replica_of=mark.url, db=str(path))


class ReplicaLease:
    """The writer lease's stand-in on a replica: never held, never taken; a write asked for is refused."""

    held = False
    idle_release_seconds = 0.0

    def __init__(self, mark: ReplicaMark) -> None:
        self.mark = mark

    @contextmanager
    def hold(self, wait_seconds: float | None = None) -> Iterator[None]:
        raise refusal(self.mark)
        yield  # pragma: no cover

    def try_acquire(self) -> bool:
        return False

    def holder(self) -> dict[str, Any] | None:
        return None

    def claim_fill(self, take: bool = False) -> bool:
        return False  # a replica never embeds: its vectors come from the writer

    def end_fill(self) -> None:
        pass

    def filling_elsewhere(self) -> bool:
        return False

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass
