"""Named points in long work where a crash test can stop or kill the process.

``AUTODOC_TEST_KILL_AT=name:n`` SIGKILLs the process the n-th time it reaches checkpoint ``name``;
``AUTODOC_TEST_PAUSE_AT=name:n`` SIGSTOPs it there instead (the test then looks around and kills
it). Tests use them to interrupt a run at a known place in the work, whatever the machine's speed.
Unset (always, outside tests), a checkpoint costs one comparison.
"""

from __future__ import annotations

import os
import signal

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


def reached(name: str) -> None:
    """Count one arrival at ``name``; stop or kill the process if a test asked for this one."""
    if name not in _NAMES:
        return
    _reached[name] = _reached.get(name, 0) + 1
    for sig, target in _TARGETS.items():
        if target == (name, _reached[name]):
            os.kill(os.getpid(), sig)
