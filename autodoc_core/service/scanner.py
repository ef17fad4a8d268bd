"""The periodic scan of a server with no editor beside it: the index follows the files.

The editor scans its workspaces every ``scan_ms`` and re-indexes a buffer when it is saved; an agent's MCP
server alone had nothing of the kind, and an edit made on disk stayed unsearchable (and its hits' lines stale)
until someone ran an index. Every ``interval`` seconds, and at once when woken (a search met a file changed
since it was indexed), each workspace is indexed incrementally: a scan that finds nothing only stats the
files. A periodic round is skipped while another process holds the writer lease (an editor, which scans
itself); a round a search asked for waits for it, up to ``ASKED_LEASE_WAIT``.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from autodoc_core.errors import BUSY, AutodocError
from autodoc_core.providers.base import mark_background_thread

log = logging.getLogger(__name__)

DEFAULT_SCAN_SECONDS = 30.0
MIN_SCAN_SECONDS = 1.0
# A round a search asked for (it met a changed file) waits this long for another process's lease, which
# passes between its batches of vectors: a round that only took a free lease would never run while another
# process fills for hours, though the agent is told to search again in a few seconds.
ASKED_LEASE_WAIT = 30.0


class Scanner:
    def __init__(self, engine: Any, interval: float) -> None:
        self.engine = engine
        self.interval = max(interval, MIN_SCAN_SECONDS)
        self._last_problem: dict[str, str] = {}  # said once per workspace until it changes (a root not mounted)
        self._asked = threading.Event()  # a search met a changed file: the next round waits for the lease
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="autodoc-scanner", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Scan now, waiting for the lease if another process writes (a search met a file changed since it
        was indexed)."""
        self._asked.set()
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        mark_background_thread()
        while not self._stop.is_set():
            try:
                self.scan_once()
            except Exception:  # a lease file or database fault: said, and tried next round
                log.exception("scanning the workspaces failed")
            self._wake.wait(timeout=self.interval)
            self._wake.clear()

    def scan_once(self) -> None:
        asked = self._asked.is_set()
        self._asked.clear()
        wait = ASKED_LEASE_WAIT if asked else 0.0
        for workspace in self.engine.workspace_list():
            name = workspace["name"]
            if self._stop.is_set() or not (asked or self.engine.store.lease.try_acquire()):
                return  # another process writes now (an editor scans by itself): the next round comes soon
            try:
                self.engine.workspace_index(name, lease_wait=wait)
            except AutodocError as exc:
                if exc.code == BUSY:  # another process took the lease since: not a problem of this workspace
                    return
                if self._last_problem.get(name) != exc.reason:  # a root not mounted: once, not every round
                    log.warning("scanning %s: %s", name, exc.reason)
                self._last_problem[name] = exc.reason
            else:
                self._last_problem.pop(name, None)
