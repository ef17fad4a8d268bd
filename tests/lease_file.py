"""Reading the writer lease's file as the lease itself reads it (not a test module)."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

from autodoc_core.store.lease import lease_path


def lease_record(db: Path) -> dict:
    """The lease file's record, read under its flock as the lease itself reads it (never torn)."""
    if not lease_path(db).exists():
        return {}
    with open(lease_path(db), "rb") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        raw = handle.read()
    return json.loads(raw) if raw.strip() else {}
