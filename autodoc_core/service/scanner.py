"""The periodic scan of a server with no editor beside it: the index follows the files.

The editor scans its workspaces every ``scan_ms`` and re-indexes a buffer when it is saved; an agent's MCP
server alone had nothing of the kind, and an edit made on disk stayed unsearchable (and its hits' lines stale)
until someone ran an index. Every ``interval`` seconds, and at once when woken (a search met a file changed
since it was indexed), each workspace is indexed incrementally: a scan that finds nothing only stats the
files. A round is skipped while another process holds the writer lease (an editor, which scans itself).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from autodoc_core.errors import AutodocError
from autodoc_core.providers.base import mark_background_thread

log = logging.getLogger(__name__)

DEFAULT_SCAN_SECONDS = 30.0


class Scanner:
    def __init__(self, engine: Any, interval: float) -> None:
        self.engine = engine
        self.interval = interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="autodoc-scanner", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Scan now (a search met a file changed since it was indexed)."""
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        mark_background_thread()
        while not self._stop.is_set():
            self.scan_once()
            self._wake.wait(timeout=self.interval)
            self._wake.clear()

    def scan_once(self) -> None:
        if not self.engine.store.lease.try_acquire():
            return  # another process writes now: an editor scans by itself, and the next round comes soon
        for workspace in self.engine.workspace_list():
            if self._stop.is_set():
                return
            try:
                self.engine.workspace_index(workspace["name"])
            except AutodocError as exc:  # a root not mounted, a removed workspace: said in the log, tried again
                log.warning("scanning %s: %s", workspace["name"], exc.reason)
