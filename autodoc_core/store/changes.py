"""The ``changes`` log: each document added, changed or deleted, in order (``seq``), for clients that keep
their own copy in step (changes.since); pruned to a week and at most ``KEEP_ROWS`` rows a workspace."""

from __future__ import annotations

import json
import time

import apsw

KEEP_SECONDS = 7 * 24 * 3600
KEEP_ROWS = 100_000


def log(conn: apsw.Connection, ws_id: int, op: str, path: str, generation: int, detail: dict | None = None) -> None:
    conn.execute(
        "INSERT INTO changes(ws_id, op, path, generation, at, detail) VALUES (?,?,?,?,?,?)",
        (ws_id, op, path, generation, time.time(), json.dumps(detail) if detail else None),
    )


def prune(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute(
        "DELETE FROM changes WHERE ws_id = ? AND at < ? AND seq < "
        "(SELECT seq FROM changes WHERE ws_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
        (ws_id, time.time() - KEEP_SECONDS, ws_id, KEEP_ROWS - 1),
    )


def oldest(conn: apsw.Connection, ws_id: int) -> int | None:
    return conn.execute("SELECT MIN(seq) FROM changes WHERE ws_id = ?", (ws_id,)).fetchone()[0]


def after(conn: apsw.Connection, ws_id: int, seq: int,
          limit: int) -> list[tuple[int, str, str, int, float, str | None]]:
    """(seq, op, path, generation, at, detail as JSON) of up to ``limit`` changes after ``seq``."""
    return conn.execute(
        "SELECT seq, op, path, generation, at, detail FROM changes WHERE ws_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        (ws_id, seq, limit),
    ).fetchall()


def remove_workspace(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute("DELETE FROM changes WHERE ws_id = ?", (ws_id,))
