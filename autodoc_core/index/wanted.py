"""The documents a user is looking at, embedded first while a workspace fills: the documents a search's
hits are in (the next search on the same topic then has their sections) and those an editor has open
(``embedding.focus``). Per workspace, the most recent first, a bounded number kept."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

KEPT = 200  # documents per workspace: a search's hits or an editor's buffers, many times over


class WantedDocuments:
    def __init__(self) -> None:
        self._paths: dict[int, OrderedDict[str, None]] = {}
        self._lock = threading.Lock()

    def want(self, ws_id: int, paths: Iterable[str]) -> None:
        """These documents first (the first of ``paths`` first of all)."""
        with self._lock:
            wanted = self._paths.setdefault(ws_id, OrderedDict())
            for path in reversed(list(dict.fromkeys(paths))):
                wanted[path] = None
                wanted.move_to_end(path, last=False)
            while len(wanted) > KEPT:
                wanted.popitem()

    def paths(self, ws_id: int) -> list[str]:
        with self._lock:
            return list(self._paths.get(ws_id, ()))

    def done(self, ws_id: int, paths: Iterable[str]) -> None:
        """These have every vector now."""
        with self._lock:
            wanted = self._paths.get(ws_id)
            for path in paths:
                if wanted is not None:
                    wanted.pop(path, None)
