"""What an engine remembers between its searches (``SearchCaches``): figures about a workspace's index that
are costly to count and change only when the index does. One engine owns one, shared by the threads its
surfaces search from; two engines never share one."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from autodoc_core.retrieve import more_like_this

T = TypeVar("T")


class Remembered(Generic[T]):
    """One value per key, kept while the key's version stays the same. The value is made outside the lock
    (it reads the database): two threads asking at once may both make it, and either result is right."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[Hashable, tuple[Hashable, T]] = {}

    def get(self, key: Hashable, version: Hashable, make: Callable[[], T]) -> T:
        with self._lock:
            held = self._held.get(key)
        if held is not None and held[0] == version:
            return held[1]
        value = make()
        with self._lock:
            self._held[key] = (version, value)
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)


class SearchCaches:
    """An engine's memory between searches: each workspace's median sections per document (the blend's
    automatic weight), its mean section length in words and its sections' distinctive words (related)."""

    def __init__(self) -> None:
        self.sections_per_document: Remembered[int] = Remembered()
        self.average_tokens: Remembered[float] = Remembered()
        self._words = more_like_this.WordsMemo()
        self._words_lock = threading.Lock()

    def words(self, workspace: tuple[str, int], version: tuple, key: tuple,
              make: Callable[[], list[more_like_this.WeightedWord]]) -> list[more_like_this.WeightedWord]:
        """The words remembered for ``key`` in this version of the workspace's index, else made and kept."""
        with self._words_lock:
            found = self._words.get(workspace, version, key)
        if found is None:
            found = make()
            with self._words_lock:
                self._words.put(workspace, version, key, found)
        return found

    @property
    def words_remembered(self) -> int:
        """How many times the words were read from memory rather than made."""
        with self._words_lock:
            return self._words.hits
