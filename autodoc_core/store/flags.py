"""Flags of the whole database, seen by every process on it: set until cleared, whoever asked and whether
it still runs. Today one: ``EMBEDDING_PAUSED`` (embedding.pause, until embedding.resume)."""

from __future__ import annotations

import time

import apsw

EMBEDDING_PAUSED = "embedding_paused"


def is_set(conn: apsw.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM flags WHERE name = ?", (name,)).fetchone() is not None


def set_flag(conn: apsw.Connection, name: str) -> None:
    conn.execute("INSERT OR IGNORE INTO flags(name, set_at) VALUES (?, ?)", (name, time.time()))


def clear(conn: apsw.Connection, name: str) -> None:
    conn.execute("DELETE FROM flags WHERE name = ?", (name,))
