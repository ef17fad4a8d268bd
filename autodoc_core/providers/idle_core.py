"""The background fill's use of the core a search would otherwise have: searches in progress, and the
fill's batches shared between its steady worker and an idle-core worker.

The fill always has one steady worker (on two cores the other one is left to searches and the editor).
While no search runs in this process, an idle-core worker embeds batches beside it. A search that
begins ends the idle-core worker's forward pass at once (onnxruntime's ``RunOptions.terminate``, checked
between the graph's nodes); its batch goes back to the queue, for the steady worker or for the idle-core
worker once no search runs. Searches in other processes are not seen: their own machine's scheduler and
the fill's lowered priority are all they get, as before.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

B = TypeVar("B")
R = TypeVar("R")


def _no_checkpoint(name: str) -> None:
    """Named points in a pass where tests hold a worker; the service points this at ``checkpoints.reached``
    (this floor cannot import it)."""


checkpoint: Callable[[str], None] = _no_checkpoint


class SearchActivity:
    """Searches running in this process, and the idle-core forward passes they stop."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._searches = 0
        self._runs: set[Any] = set()  # RunOptions of idle-core passes in flight
        self.passes = {"steady": 0, "idle_core": 0, "given_back": 0}
        self.workers = 0  # fill workers embedding right now

    @contextmanager
    def searching(self) -> Iterator[None]:
        with self._changed:
            self._searches += 1
            for options in self._runs:
                options.terminate = True
        try:
            yield
        finally:
            with self._changed:
                self._searches -= 1
                self._changed.notify_all()

    def searches(self) -> int:
        return self._searches

    def state(self) -> dict[str, Any]:
        """For status: fill workers now, searches now, and passes so far by worker (and given back)."""
        with self._changed:
            return {"fill_workers": self.workers, "searches": self._searches, "passes": dict(self.passes)}

    def nudge(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def wait_idle(self, give_up: Callable[[], bool]) -> bool:
        """Wait until no search runs (True), or until ``give_up()`` (False)."""
        with self._changed:
            while self._searches and not give_up():
                self._changed.wait()
            return not self._searches

    def claim(self, options: Any) -> bool:
        """Register an idle-core pass; False (nothing registered) while a search runs."""
        with self._changed:
            if self._searches:
                return False
            self._runs.add(options)
            return True

    def release(self, options: Any) -> None:
        with self._changed:
            self._runs.discard(options)

    def count(self, kind: str) -> None:
        with self._changed:
            self.passes[kind] += 1

    def working(self, change: int) -> None:
        with self._changed:
            self.workers += change


SEARCHES = SearchActivity()


class _Queue:
    """The batches not yet embedded; a batch given back goes to its front."""

    def __init__(self, size: int, activity: SearchActivity) -> None:
        self._waiting = deque(range(size))
        self._in_idle_core = 0
        self._lock = threading.Condition(threading.Lock())
        self._activity = activity

    def take(self, idle_core: bool = False) -> int | None:
        """The next batch; the steady worker waits while an idle-core pass could still give one back."""
        with self._lock:
            while not self._waiting and self._in_idle_core and not idle_core:
                self._lock.wait()
            if not self._waiting:
                return None
            self._in_idle_core += idle_core
            index = self._waiting.popleft()
        if not self._waiting:  # an idle-core worker waiting for the searches to end can stop waiting
            self._activity.nudge()
        return index

    def done(self, index: int | None, given_back: bool) -> None:
        with self._lock:
            self._in_idle_core -= 1
            if given_back and index is not None:
                self._waiting.appendleft(index)
            self._lock.notify_all()
        self._activity.nudge()

    def empty(self) -> bool:
        return not self._waiting  # no lock: SearchActivity.wait_idle asks with its own lock held


def run_sharing(batches: Sequence[B], run: Callable[[B, Any | None], R], new_options: Callable[[], Any],
                steady: int = 1, activity: SearchActivity = SEARCHES) -> list[R]:
    """``run(batch, options)`` for every batch: in ``steady`` workers (this thread and ``steady - 1``
    more), and in an idle-core worker while no search runs; results in batch order."""
    results: list[Any] = [None] * len(batches)
    queue = _Queue(len(batches), activity)
    helpers = [threading.Thread(target=_idle_core_worker, args=(batches, run, new_options, activity, queue, results),
                                name="autodoc-idle-core", daemon=True)]
    failures: list[BaseException] = []

    def steady_helper() -> None:
        try:
            _steady_worker(batches, run, activity, queue, results)
        except BaseException as exc:  # noqa: BLE001 - raised again in the calling thread
            failures.append(exc)

    helpers += [threading.Thread(target=steady_helper, name="autodoc-fill-worker", daemon=True)
                for _ in range(steady - 1)]
    for helper in helpers:
        helper.start()
    try:
        _steady_worker(batches, run, activity, queue, results)
    finally:
        for helper in helpers:
            helper.join()
    if failures:
        raise failures[0]
    return results


def _steady_worker(batches: Sequence[B], run: Callable[[B, Any | None], R], activity: SearchActivity,
                   queue: _Queue, results: list[Any]) -> None:
    activity.working(1)
    try:
        while (index := queue.take()) is not None:
            checkpoint("encode.steady")
            results[index] = run(batches[index], None)
            activity.count("steady")
    finally:
        activity.working(-1)


def _idle_core_worker(batches: Sequence[B], run: Callable[[B, Any | None], R], new_options: Callable[[], Any],
                      activity: SearchActivity, queue: _Queue, results: list[Any]) -> None:
    while activity.wait_idle(queue.empty) or not queue.empty():
        index = queue.take(idle_core=True)
        if index is None:
            return
        given_back, failed = True, False
        try:
            options = new_options()
            if activity.claim(options):
                given_back, failed = _idle_core_pass(batches[index], run, options, activity, results, index)
        finally:
            queue.done(index, given_back)
        checkpoint("encode.idle_core")
        if failed:
            return


def _idle_core_pass(batch: B, run: Callable[[B, Any | None], R], options: Any, activity: SearchActivity,
                    results: list[Any], index: int) -> tuple[bool, bool]:
    """One claimed pass: (given back, failed for a reason other than a search)."""
    activity.working(1)
    try:
        checkpoint("encode.idle_core_claimed")
        results[index] = run(batch, options)
        activity.count("idle_core")
        return False, False
    except Exception:  # noqa: BLE001 - a pass a search ended; any other failure: the steady worker redoes it
        activity.count("given_back")
        return True, not options.terminate
    finally:
        activity.working(-1)
        activity.release(options)
