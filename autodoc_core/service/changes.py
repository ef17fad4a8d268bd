"""The change feed: what the indexer wrote, in order, for clients that keep their own copy."""

from __future__ import annotations

import json
import time
from typing import Any

import apsw

from autodoc_core.errors import invalid_params, whole_number
from autodoc_core.store import changes as log
from autodoc_core.store.workspace import Workspace

PAGE = 1000


def since(conn: apsw.Connection, ws: Workspace, cursor: Any = None) -> dict[str, Any]:
    """Up to PAGE changes after ``cursor`` (null: from the start), the next cursor, and whether the
    log was pruned past it (then the client must resynchronise from scratch)."""
    if cursor is not None and not whole_number(cursor, 0):
        raise invalid_params("cursor must be null or the integer returned by a previous changes.since")
    start = cursor or 0
    oldest = log.oldest(conn, ws.id)
    rows = log.after(conn, ws.id, start, PAGE + 1)
    more = len(rows) > PAGE
    rows = rows[:PAGE]
    changes = [
        {"seq": seq, "op": op, "path": path, "generation": gen, "at": at, **(json.loads(detail) if detail else {})}
        for seq, op, path, gen, at, detail in rows
    ]
    return {
        "changes": changes,
        "cursor": rows[-1][0] if rows else start,
        "more": more,
        "reset": bool(cursor) and oldest is not None and oldest > start + 1,
        "at": time.time(),
    }
