"""What an index run tells: its progress while it runs (workspace.status) and its report at the end."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class IndexProgress:
    """A run under way, for workspace.status: files scanned, then documents written of those to write."""

    phase: str = "scanning"  # "scanning", "writing", then "finishing" (deletions, links)
    scanned: int = 0
    to_write: int = 0
    written: int = 0
    started: float = field(default_factory=time.monotonic)
    writing_since: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        elapsed = time.monotonic() - (self.writing_since or self.started)
        rate = self.written / elapsed if self.phase == "writing" and elapsed > 0 else 0.0
        eta = (self.to_write - self.written) / rate if rate > 0 else None
        return {"phase": self.phase, "scanned": self.scanned, "to_write": self.to_write, "written": self.written,
                "rate": round(rate, 1), "eta_seconds": round(eta, 1) if eta is not None else None,
                "seconds": round(time.monotonic() - self.started, 1)}


@dataclass
class IndexReport:
    scanned: int = 0
    added: int = 0
    changed: int = 0
    renamed: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks_written: int = 0
    chunks_kept: int = 0
    chunks_deleted: int = 0
    seconds: float = 0.0
    problems: list[dict] = field(default_factory=list)
    not_indexed: list[dict] = field(default_factory=list)  # listed paths (a run with ``only``) the walk would not index

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}
