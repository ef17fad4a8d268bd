"""A search of a scope (search.scope): each workspace's search run side by side, one thread each, and their answers
merged; a streamed search hands over one merged lexical answer once every workspace has reached its own.

The threads overlap where a search waits outside Python: SQLite's reads and the query's embedding.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from autodoc_core.errors import AutodocError
from autodoc_core.retrieve.options import DEFAULT_LIMIT
from autodoc_core.search.answer import SearchAnswer
from autodoc_core.search.scope import Scope, Searched, merged
from autodoc_core.search.stream import SearchStream

SearchOne = Callable[[Searched, SearchStream | None], SearchAnswer]
Shape = Callable[[SearchAnswer], None]  # what a merged answer's hits get once merged (their snippets)


def limit_of(opts: object) -> int:
    """The merged list's limit: the options' own (each workspace's search checks it)."""
    limit = opts.get("limit") if isinstance(opts, dict) else None
    return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else DEFAULT_LIMIT


def search_scope(scope: Scope, parts: list[Searched], search_one: SearchOne, limit: int,
                 stream: SearchStream | None = None, shape: Shape | None = None) -> SearchAnswer:
    """Search every part (``search_one``), side by side, and merge their answers. A scope of one workspace raises
    its error; of several, a workspace that fails is named in the answer and the others answer (all failing
    raises the first error). ``shape``: done to a merged answer of several workspaces (each workspace's search
    leaves out what only the merged hits need)."""
    started = time.perf_counter()
    shape = shape if len(parts) > 1 else None
    partials = _Partials(scope, parts, limit, stream, shape) if stream is not None else None

    def run(part: Searched) -> None:
        follower = partials.follower(part) if partials is not None else None
        try:
            part.answer = search_one(part, follower)
        except AutodocError as exc:
            if len(parts) == 1:
                raise
            part.error = exc
        finally:
            if partials is not None:
                partials.ended(part)

    _side_by_side(run, parts)
    whole = merged(scope, parts, limit, {})
    if shape is not None:
        shape(whole)
    if len(parts) > 1:
        whole.timing = {"total": round((time.perf_counter() - started) * 1000, 3),
                        **{f"workspace.{p.name}": p.answer.timing.get("total", 0.0) for p in parts if p.answer}}
    return whole


# Threads kept for the other workspaces' searches: starting a thread per search cost up to 12 ms each on a
# loaded machine (the start waits for the new thread to run), more than a small workspace's whole search.
_WORKERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="autodoc-scope")


def _side_by_side(run: Callable[[Searched], None], parts: list[Searched]) -> None:
    """``run`` each part, the first in this thread and the others in the kept threads; the first exception (a
    cancellation, a bug) is raised once all have ended."""
    others = [_WORKERS.submit(run, part) for part in parts[1:]]
    failures: list[BaseException] = []
    try:
        run(parts[0])
    except BaseException as exc:  # noqa: BLE001 (raised below, once the others have ended)
        failures.append(exc)
    for future in others:
        if (exc := future.exception()) is not None:
            failures.append(exc)
    if failures:
        raise failures[0]


class _Partials:
    """A streamed search of a scope: each workspace's lexical answer (or its final one, when it had no later
    stage) is kept; once every workspace has given one and some are partial, the merged partial answer is handed
    over, once."""

    def __init__(self, scope: Scope, parts: list[Searched], limit: int, stream: SearchStream,
                 shape: Shape | None) -> None:
        self.scope, self.parts, self.limit, self.stream, self.shape = scope, parts, limit, stream, shape
        self.lock = threading.Lock()
        self.got: dict[str, tuple[SearchAnswer | None, bool]] = {}
        self.done = False

    def follower(self, part: Searched) -> SearchStream:
        return self.stream.follower(lambda answer: self._arrived(part, answer, True))

    def ended(self, part: Searched) -> None:
        self._arrived(part, part.answer, False)

    def _arrived(self, part: Searched, answer: SearchAnswer | None, partial: bool) -> None:
        with self.lock:
            if self.done or part.name in self.got:
                return
            self.got[part.name] = (answer, partial)
            if len(self.got) < len(self.parts):
                return
            self.done = True
            if not any(partial for _, partial in self.got.values()):
                return
            copies = [dataclasses.replace(p, answer=self.got[p.name][0]) for p in self.parts]
        try:
            whole = merged(self.scope, copies, self.limit, {})
            if self.shape is not None:
                self.shape(whole)
        except AutodocError:  # no workspace answered, or the index went away: the final answer says why
            return
        self.stream.hand_over(whole)
