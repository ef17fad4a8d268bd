"""How fast a workspace's vectors fill, from the database's embedded count over the last WINDOW_SECONDS.

Only the holder of the writer lease embeds: another editor on the same database sees the count climb while
its own filler does nothing. The rate and the time left come from the count, whoever embeds; every count
read (a status answer, a batch this process stored) is a sample.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

WINDOW_SECONDS = 30.0


@dataclass(frozen=True)
class FillRate:
    """The fill's pace as the database shows it."""

    embedded: int
    total: int
    rate: float  # texts embedded a second over the window; 0 when the count did not move
    eta_seconds: float | None  # the time left at that rate; None while the rate is 0

    def as_dict(self) -> dict[str, Any]:
        eta = round(self.eta_seconds, 1) if self.eta_seconds is not None else None
        return {"rate": round(self.rate, 2), "eta_seconds": eta}


class FillWindow:
    """One workspace's samples of its embedded count, for one model: another model starts over, and so does a
    count that fell (documents deleted). Safe from several threads (status answers, the filler)."""

    def __init__(self, window: float = WINDOW_SECONDS) -> None:
        self.window = window
        self._model_fp = ""
        self._samples: deque[tuple[float, int]] = deque()  # (monotonic time, embedded), oldest first
        self._lock = threading.Lock()

    def observe(self, model_fp: str, embedded: int, total: int, now: float | None = None) -> FillRate:
        """Add a sample of the count read now; the rate over the window (from the last sample before it)."""
        with self._lock:
            now = time.monotonic() if now is None else now
            if model_fp != self._model_fp or (self._samples and embedded < self._samples[-1][1]):
                self._model_fp, self._samples = model_fp, deque()
            self._samples.append((now, embedded))
            while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
                self._samples.popleft()
            (first_at, first), (last_at, last) = self._samples[0], self._samples[-1]
        rate = (last - first) / (last_at - first_at) if last_at > first_at else 0.0
        eta = max(total - embedded, 0) / rate if rate > 0 else None
        return FillRate(embedded, total, rate, eta)
