"""Following one search while it runs: the lexical answer handed over before the slower stages end, and the
boundaries between stages where a newer query stops it.

A caller that shows results as they come (the Neovim picker) passes a ``SearchStream`` to the pipeline; a
plain request passes none and gets one answer, as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autodoc_core.search.answer import SearchAnswer


class SearchCancelled(Exception):  # a cancellation, not an error the user sees
    """A newer query replaced this one; ``stage`` is the stage it stopped before."""

    def __init__(self, stage: str) -> None:
        super().__init__(f"cancelled before the {stage} stage")
        self.stage = str(stage)  # a plain string on the wire (msgpack, JSON), not the Stage it may be


@dataclass
class SearchStream:
    """``on_partial(answer)`` gets the answer so far (same shape as the final one, ``partial`` true, the stages
    still to run in ``stages.pending``); ``cancelled`` is its one signal, set by ``cancel()`` when a newer query
    replaces this one, and read at every stage boundary."""

    on_partial: Callable[[dict[str, Any]], None] | None = None
    cancelled: bool = False
    # Set when the query's embedding ends, and by cancel(): a wait for the embedding wakes at once for either,
    # so neither waits for a poll to notice it.
    woken: threading.Event = field(default_factory=threading.Event)
    # A follower's partial answer as the record, for the search of several workspaces that merges them
    # (service.scoped); a stream with it set hands over no wire answer itself.
    on_answer: Callable[[SearchAnswer], None] | None = None
    followers: list[SearchStream] = field(default_factory=list)
    leader: SearchStream | None = None  # a follower stops where its leader does

    def follower(self, on_answer: Callable[[SearchAnswer], None]) -> SearchStream:
        """A stream for one workspace's part of this search: its partial answer goes to ``on_answer``, and it
        stops when this one is cancelled."""
        child = SearchStream(on_answer=on_answer, leader=self)
        self.followers.append(child)
        return child

    @property
    def wants_partial(self) -> bool:
        return self.on_partial is not None or self.on_answer is not None

    def cancel(self) -> None:
        """A newer query replaced this one: it stops at its next stage boundary, at once if it waits for its
        query's embedding."""
        self.cancelled = True
        self.woken.set()
        for child in self.followers:
            child.cancel()

    def check(self, next_stage: str) -> None:
        """Stop here (raise SearchCancelled) when a newer query replaced this one."""
        if self.leader is not None:
            self.leader.check(next_stage)
        if self.cancelled:
            raise SearchCancelled(next_stage)

    def wait(self, limit: float | None, next_stage: str) -> None:
        """Wait for the query embedding (``woken``) at most ``limit`` seconds (None: no limit), stopping as soon
        as the search is cancelled: a slow embedder no longer holds a search nobody will read."""
        self.woken.wait(limit)
        self.check(next_stage)

    def hand_over(self, answer: SearchAnswer) -> None:
        """Give the caller ``answer``, the hits so far (``SearchAnswer.as_partial(...)``), as the record to a
        follower and on the wire to the caller's ``on_partial``."""
        if self.on_answer is not None:
            self.on_answer(answer)
        elif self.on_partial is not None:
            self.on_partial(answer.to_wire())
