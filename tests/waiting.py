"""The one wait of the tests: poll a condition until it holds and return its value.

The deadline only bounds a hang, it never decides a pass; the failure names the state waited for (``what``,
else the condition's source line). A condition may raise to say the state can no longer come (a process that
ended). ``tests.conftest.wait_until`` and ``tests.nvim.wait_for`` are this function.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

TIMEOUT = 60.0  # seconds: a generous bound on a hang, on a loaded 2-core machine
EVERY = 0.02  # seconds between two looks


def wait_until(condition: Callable[[], Any], timeout: float = TIMEOUT, *, what: str | None = None,
               every: float = EVERY) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or _source(condition)}")
        time.sleep(every)


async def wait_until_async(condition: Callable[[], Awaitable[Any]], timeout: float = TIMEOUT, *,
                           what: str | None = None, every: float = 0.2) -> Any:
    """``wait_until`` for a test that talks to a server in an event loop: ``condition`` is awaited."""
    deadline = time.monotonic() + timeout
    while True:
        value = await condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or _source(condition)}")
        await anyio.sleep(every)


def _source(condition: Callable[..., Any]) -> str:
    try:
        return inspect.getsource(condition).strip()
    except (OSError, TypeError):
        return repr(condition)
