"""The background vector fill of a long-lived process (the server, the editor's host).

Each workspace on its own schedule: a failing or hanging provider backs off (1 s doubling to
5 min) without holding up the others. Only the process holding the writer lease fills, so two
editors on one database never embed the same text twice; and once one fills, the others leave the fill
to it until it ends (``WriterLease.claim_fill``), lending it the lease between batches for their writes.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import apsw

from autodoc_core.providers.base import mark_background_thread
from autodoc_core.store import flags
from autodoc_core.store import workspace as wsmod
from autodoc_core.store.database import Store
from autodoc_core.store.workspace import Workspace

LEASE_RETRY_SECONDS = 5.0
FILLER_NICENESS = 10  # the fill yields the cores to searches in the same process (and to the editor)
MAX_BACKOFF_SECONDS = 300.0
IDLE_WAKE_SECONDS = 60.0


class EmbeddingPause:
    """embedding.pause, kept in the database (``store.flags``) for every process on it until embedding.resume:
    a host restarted after a crash, or another editor on the same file, does not fill either. Read before each
    batch: a pause asked in another process stops this one's fill after the batch under way."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def is_set(self) -> bool:
        with self.store.snapshot() as conn:
            return flags.is_set(conn, flags.EMBEDDING_PAUSED)

    def set(self) -> None:
        with self.store.write() as conn:
            flags.set_flag(conn, flags.EMBEDDING_PAUSED)

    def clear(self) -> None:
        with self.store.write() as conn:
            flags.clear(conn, flags.EMBEDDING_PAUSED)


class BackgroundFiller:
    def __init__(self, store: Store, needs_vectors: Callable[[apsw.Connection, Workspace], bool],
                 fill: Callable[..., Any], stop: threading.Event, paused: EmbeddingPause) -> None:
        self.store = store
        self._needs_vectors = needs_vectors
        self._fill = fill
        self._stop = stop
        self._paused = paused  # embedding.pause: no new batch until embedding.resume wakes the loop
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._state = "waiting"
        self._looked_at: float | None = None  # when its latest look for work began (Unix time)
        self._asked: list[int] = []  # workspaces with work now, in the order asked (see wake)
        self._retry_at: dict[int, float] = {}
        self._backoff: dict[int, float] = {}
        self._thread = threading.Thread(target=self._loop, name="autodoc-embedder", daemon=True)
        self._thread.start()

    def wake(self, ws_id: int | None = None) -> None:
        """Look for work now (after an index run or a configuration change); ``ws_id``: a workspace that has work
        now (an index run's, a search's while it fills), filled before the others at the next look."""
        with self._lock:
            if ws_id is not None and ws_id not in self._asked:
                self._asked.append(ws_id)
        self._wake.set()

    def asked_elsewhere(self, ws_id: int) -> bool:
        """Whether a workspace other than ``ws_id`` was asked for since the last look: a long fill hands over
        after its batch, so a saved note is not left out of the search by meaning until another workspace's
        thousands of sections are embedded."""
        with self._lock:
            return any(asked != ws_id for asked in self._asked)

    def state(self) -> dict[str, Any]:
        """What the filler does now: "filling", "paused" (embedding.pause: it looked and took nothing) or
        "waiting"; ``looked_at``: when its latest look for work began (a look begun after an ask answers it)."""
        with self._lock:
            return {"state": self._state, "looked_at": self._looked_at}

    def _set_state(self, state: str) -> None:
        with self._lock:
            self._state = state

    def join(self, timeout: float) -> None:
        self._wake.set()
        self._thread.join(timeout=timeout)

    def _loop(self) -> None:
        _lower_this_threads_priority()
        mark_background_thread()
        while not self._stop.is_set():
            now = time.monotonic()
            self._wake.wait(timeout=min([IDLE_WAKE_SECONDS, *(max(t - now, 0.05) for t in self._retry_at.values())]))
            self._wake.clear()
            looked_at = time.time()
            paused = self._paused.is_set()
            with self._lock:
                self._looked_at, self._state = looked_at, "paused" if paused else "waiting"
            if paused:
                continue
            for ws in self._workspaces_needing_vectors():
                if self._stop.is_set():
                    return
                self._fill_one(ws)

    def _workspaces_needing_vectors(self) -> list[Workspace]:
        """Those with vectors to fill: the ones asked for first (see wake), then by name."""
        with self._lock:
            asked, self._asked = self._asked, []
        with self.store.snapshot() as conn:
            spaces = [ws for ws in wsmod.all_workspaces(conn) if self._needs_vectors(conn, ws)]
        spaces.sort(key=lambda ws: asked.index(ws.id) if ws.id in asked else len(asked))
        # Forget schedules of workspaces that need nothing now (filled by another process, removed):
        # a past-due entry would keep waking this loop, at its shortest wait, for nothing.
        needed = {ws.id for ws in spaces}
        self._retry_at = {ws_id: at for ws_id, at in self._retry_at.items() if ws_id in needed}
        self._backoff = {ws_id: delay for ws_id, delay in self._backoff.items() if ws_id in needed}
        return spaces

    def _fill_one(self, ws: Workspace) -> None:
        if time.monotonic() < self._retry_at.get(ws.id, 0):
            return
        lease = self.store.lease
        if not lease.claim_fill():
            self._retry_at[ws.id] = time.monotonic() + LEASE_RETRY_SECONDS  # another process fills now
            return
        if not lease.try_acquire():
            lease.end_fill()
            self._retry_at[ws.id] = time.monotonic() + LEASE_RETRY_SECONDS  # another process writes now
            return
        self._set_state("filling")
        try:
            self._fill(ws, background=True)
        except Exception:  # recorded in the workspace's progress; a background thread survives
            delay = self._backoff[ws.id] = min(self._backoff.get(ws.id, 0.5) * 2, MAX_BACKOFF_SECONDS)
            self._retry_at[ws.id] = time.monotonic() + delay
        else:
            self._backoff.pop(ws.id, None)
            self._retry_at.pop(ws.id, None)
        finally:
            lease.end_fill()
            self._set_state("paused" if self._paused.is_set() else "waiting")


def _lower_this_threads_priority() -> None:
    """On Linux a thread has its own nice value, and threads it starts (the encoder's workers) inherit
    it: a search in this process then gets the cores before the fill. Elsewhere, or when refused,
    nothing changes."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FILLER_NICENESS)
