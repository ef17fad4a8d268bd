"""Named points in long work where a crash test can stop or kill the process.

``AUTODOC_TEST_KILL_AT=name:n`` SIGKILLs the process the n-th time it reaches checkpoint ``name``;
``AUTODOC_TEST_PAUSE_AT=name:n`` SIGSTOPs it there instead (the test then looks around and kills
it). Tests use them to interrupt a run at a known place in the work, whatever the machine's speed.
``AUTODOC_TEST_HOLD_AT=name:n`` holds the arriving thread until the file named by
``AUTODOC_TEST_RELEASE_FILE`` exists (the rest of the process keeps answering), and in-process
tests can do the same with ``Hold``. Unset (always, outside tests), a checkpoint costs one comparison.
"""

from __future__ import annotations

import os
import signal
import threading
import time

HOLD_LIMIT_SECONDS = 120.0
RELEASE_FILE_LOOK_SECONDS = 0.05
KILL_VARIABLE = "AUTODOC_TEST_KILL_AT"
PAUSE_VARIABLE = "AUTODOC_TEST_PAUSE_AT"


def _target(variable: str) -> tuple[str, int] | None:
    name, _, count = os.environ.get(variable, "").rpartition(":")
    return (name, int(count)) if name and count.isdigit() else None


_TARGETS = {signal.SIGKILL: _target(KILL_VARIABLE), signal.SIGSTOP: _target(PAUSE_VARIABLE)}
_NAMES = {target[0] for target in _TARGETS.values() if target}
_reached: dict[str, int] = {}


def pause_after(name: str, arrivals: int) -> None:
    """Stop this process at the ``arrivals``-th arrival at ``name`` from now (for test workers that
    decide at run time where to stop)."""
    target = (name, _reached.get(name, 0) + arrivals)
    _TARGETS[signal.SIGSTOP] = target
    _NAMES.add(name)


class Hold:
    """For in-process tests: the thread that makes the ``count``-th arrival at ``name`` waits there
    until ``release`` is set (``arrived`` tells the test it is there), or ``release_file`` exists."""

    def __init__(self, name: str, count: int, release_file: str | None = None) -> None:
        self.name, self.count = name, _reached.get(name, 0) + count
        self.arrived, self.release = threading.Event(), threading.Event()
        self.release_file = release_file

    def __enter__(self) -> Hold:
        _holds[self.name] = self
        _NAMES.add(self.name)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        _holds.pop(self.name, None)

    def wait(self) -> None:
        """Hold the arriving thread until released, ``HOLD_LIMIT_SECONDS`` at most. Another process releases
        it by making ``release_file``: the held thread itself looks for it, so no thread runs for it."""
        if self.release_file is None:
            self.release.wait(timeout=HOLD_LIMIT_SECONDS)
            return
        deadline = time.monotonic() + HOLD_LIMIT_SECONDS
        while not os.path.exists(self.release_file) and time.monotonic() < deadline:
            if self.release.wait(timeout=RELEASE_FILE_LOOK_SECONDS):
                return


_holds: dict[str, Hold] = {}
HOLD_VARIABLE, RELEASE_VARIABLE = "AUTODOC_TEST_HOLD_AT", "AUTODOC_TEST_RELEASE_FILE"


def _hold_from_environment() -> None:
    """``AUTODOC_TEST_HOLD_AT=name:n``: hold the n-th arrival until the file ``AUTODOC_TEST_RELEASE_FILE``
    exists (for tests that drive another process, e.g. the editor's host, and look at it mid-run)."""
    target = _target(HOLD_VARIABLE)
    release_file = os.environ.get(RELEASE_VARIABLE)
    if target is not None and release_file:
        Hold(*target, release_file=release_file).__enter__()


def reached(name: str) -> None:
    """Count one arrival at ``name``; stop or kill the process, or hold the thread, if a test asked."""
    if name not in _NAMES:
        return
    _reached[name] = _reached.get(name, 0) + 1
    hold = _holds.get(name)
    if hold is not None and hold.count == _reached[name]:
        hold.arrived.set()
        hold.wait()
    for sig, target in _TARGETS.items():
        if target == (name, _reached[name]):
            os.kill(os.getpid(), sig)


_hold_from_environment()
