"""The semantic stage's moving parts for one workspace, kept between requests: its embedder and ranker
built for the current configuration, its vectors in memory, its semantic state, the fill's progress and
the question to a remote model about its dimensions. ``SemanticRuntimes`` holds one per workspace."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import apsw

from autodoc_core.index.fill_rate import FillWindow
from autodoc_core.index.vectors import Progress, semantic_state
from autodoc_core.providers.base import Pending
from autodoc_core.providers.embedders import Embedder, make_embedder
from autodoc_core.providers.http import ProviderError
from autodoc_core.providers.rankers import Ranker, make_ranker
from autodoc_core.retrieve.semantic import VectorIndex
from autodoc_core.search.pipeline import SemanticSource
from autodoc_core.store.embeddings import SemanticState, counts
from autodoc_core.store.workspace import Workspace

P = TypeVar("P")  # a provider: Embedder | None or Ranker | None
PROBE_RETRY_SECONDS = 30.0
# Configurations of one workspace's embedder (or ranker) kept built: the current one and the one before it.
PROVIDERS_KEPT = 2


@dataclass
class _Probe:
    """One question to a remote model about its dimensions, shared by the searches that need it."""

    embedder: Embedder
    pending: Pending[None]
    failure: str | None = None
    retry_at: float = 0.0


@dataclass
class SemanticRuntime:
    """One workspace's semantic parts. Every method takes the workspace as read by the caller's snapshot."""

    embedders: dict[str, Embedder | None] = field(default_factory=dict)
    rankers: dict[str, Ranker | None] = field(default_factory=dict)
    indexes: dict[str, VectorIndex] = field(default_factory=dict)  # by model fingerprint
    state: tuple[tuple, str, tuple[int, int]] | None = None  # (key, state, (embedded, total))
    progress: Progress | None = None  # the fill under way or last run in this process
    fill_window: FillWindow = field(default_factory=FillWindow)  # the fill's rate, whichever process embeds
    probe: _Probe | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    warm: bool = False  # a long-lived process: an in-process encoder starts loading when it is built

    def _provider(self, cache: dict[str, P], ws: Workspace, option: str, factory: Callable[[dict[str, Any]], P]) -> P:
        """The embedder or ranker for the workspace's configuration, built once per configuration (so a
        change takes effect at the next query, with no restart). The last few configurations stay: a
        thread still holding the workspace as read before a change (the background filler) gets the old
        one without throwing away the new one, whose state (a remote model's dimensions) would be lost."""
        config = ws.option(option)
        key = json.dumps(config, sort_keys=True)
        with self.lock:
            if key in cache:
                cache[key] = cache.pop(key)  # most recently used last
            else:
                cache[key] = factory(config)
                for old in list(cache)[: max(0, len(cache) - PROVIDERS_KEPT)]:
                    del cache[old]
            return cache[key]

    def embedder(self, ws: Workspace) -> Embedder | None:
        embedder = self._provider(self.embedders, ws, "embedder", self._built_embedder)
        if embedder is not None:  # how long a search waits for its query's vector bounds the call
            embedder.query_wait = float(ws.option("semantic_deadline"))
        return embedder

    def _built_embedder(self, config: dict[str, Any]) -> Embedder | None:
        embedder = make_embedder(config)
        if self.warm and hasattr(embedder, "warm_up"):  # an in-process encoder starts loading now
            embedder.warm_up()
        return embedder

    def usable_embedder(self, ws: Workspace) -> tuple[Embedder | None, str | None]:
        """The embedder, or why the configured one cannot be used (e.g. the model is not installed)."""
        try:
            return self.embedder(ws), None
        except (OSError, ValueError) as exc:
            return None, f"the embedding model cannot be used: {exc}"

    def ranker(self, ws: Workspace) -> Ranker | None:
        return self._provider(self.rankers, ws, "ranker", make_ranker)

    def semantic_state(self, conn: apsw.Connection, ws: Workspace) -> SemanticSource:
        """The state, embedder and progress, without loading the vectors (status, index reports and the
        filler need no more)."""
        embedder, unavailable = self.usable_embedder(ws)
        if embedder is None:
            return SemanticSource(SemanticState.OFF, unavailable=unavailable)
        if embedder.dimensions is None:  # a remote model not yet asked: its vectors cannot exist yet
            filling = SemanticState.SWITCHING if ws.active_model_fp else SemanticState.PARTIAL
            return SemanticSource(filling, embedder, None, (0, 0))
        fingerprint = embedder.model_fp
        key = (ws.vector_epoch, fingerprint, ws.active_model_fp)
        with self.lock:
            if self.state is None or self.state[0] != key:
                progress = counts(conn, ws.id, fingerprint)
                self.state = (key, semantic_state(progress, fingerprint, ws.active_model_fp), progress)
            cached = self.state
        return SemanticSource(cached[1], embedder, None, cached[2])

    def source(self, conn: apsw.Connection, ws: Workspace, failure: str | None = None) -> SemanticSource:
        """The state plus the vectors in memory, refreshed to this snapshot: for a search. ``failure``: why
        the remote model could not be asked for its dimensions (``probe_remote_model``)."""
        source = self.semantic_state(conn, ws)
        if failure:
            return dataclasses.replace(source, failure=failure)
        if source.embedder is None or source.embedder.dimensions is None:
            return source
        fingerprint = source.embedder.model_fp
        with self.lock:
            index = self.indexes.setdefault(fingerprint, VectorIndex(ws.id, fingerprint))
        index.refresh(conn, ws.vector_epoch)
        return dataclasses.replace(source, index=index)

    def probe_remote_model(self, ws: Workspace) -> str | None:
        """Ask a remote model this process has not asked yet for its dimensions, so a fresh process does
        not take a complete model for a new one; why that failed, or None. Concurrent searches share one
        probe, and a failed probe is not repeated for PROBE_RETRY_SECONDS (searches then go on without
        the semantic stage at once instead of each waiting for the deadline)."""
        embedder, _ = self.usable_embedder(ws)
        if embedder is None or not embedder.remote or embedder.dimensions is not None:
            return None
        now = time.monotonic()
        with self.lock:
            probe = self.probe
            if probe is None or probe.embedder is not embedder or (probe.failure and now >= probe.retry_at):
                probe = self.probe = _Probe(embedder, Pending(embedder.probe, name="autodoc-model-probe"))
        if probe.failure:
            return probe.failure
        try:
            probe.pending.result(ws.option("semantic_deadline"), "the embedding provider")
        except ProviderError as exc:
            probe.failure, probe.retry_at = exc.reason, time.monotonic() + PROBE_RETRY_SECONDS
            return exc.reason
        return None

    def catch_up(self, conn: apsw.Connection, ws: Workspace) -> None:
        """After a fill's batch, in the filler's thread: bring the state and the vectors a search already holds
        up to the batch, so that the next search finds them current instead of reading the batch itself (a
        search after a pause while the fill ran took 5x the time of one with the fill paused)."""
        with self.lock:  # only one already built: a configuration changed since loads at its first search
            embedder = self.embedders.get(json.dumps(ws.option("embedder"), sort_keys=True))
        if embedder is None or embedder.dimensions is None:
            return
        self.semantic_state(conn, ws)
        with self.lock:
            index = self.indexes.get(embedder.model_fp)
        if index is not None:  # none until a search needs it: nobody to read these vectors yet
            index.refresh(conn, ws.vector_epoch)

    def fill_progress(self) -> Progress:
        """The progress a fill of this workspace reports into, started now."""
        with self.lock:
            self.progress = self.progress or Progress(window=self.fill_window)
        self.progress.done_this_run = 0
        return self.progress

    def status_progress(self, model_fp: str, embedded: int, total: int) -> dict[str, Any]:
        """The fill's progress for status: the database's count now, its pace from the workspace's window (the
        one the fill reports into: whichever process embeds), and this process's last fill's problems."""
        pace = self.fill_window.observe(model_fp, embedded, total)
        return (self.progress or Progress(model_fp=model_fp, window=self.fill_window)).as_dict(pace)

    def needs_vectors(self, conn: apsw.Connection, ws: Workspace) -> bool:
        """Whether the background filler has work here: vectors missing, or a remote model not checked."""
        try:
            source = self.semantic_state(conn, ws)
        except Exception:  # e.g. a model folder that vanished: reported by status, not here
            return False
        if source.embedder is None:
            return False
        unchecked = source.embedder.remote and ws.id not in source.embedder.checked_for  # see vectors.check_model
        return source.state != SemanticState.READY or unchecked


class SemanticRuntimes:
    """One ``SemanticRuntime`` per workspace id, made when first asked for."""

    def __init__(self) -> None:
        self._runtimes: dict[int, SemanticRuntime] = {}
        self._guard = threading.Lock()
        self._warm = False

    def warm_from_now(self) -> None:
        """A long-lived process (Engine.start_background): an in-process encoder starts loading when it is
        built, not at the first search that needs it."""
        with self._guard:
            self._warm = True
            for runtime in self._runtimes.values():
                runtime.warm = True

    def finish_warming(self, timeout: float) -> None:
        """Wait for every in-process encoder still loading (Engine.close)."""
        with self._guard:
            runtimes = list(self._runtimes.values())
        for runtime in runtimes:
            with runtime.lock:
                embedders = list(runtime.embedders.values())
            for embedder in embedders:
                if hasattr(embedder, "finish_warming"):
                    embedder.finish_warming(timeout)

    def of(self, ws: Workspace) -> SemanticRuntime:
        with self._guard:
            if ws.id not in self._runtimes:
                self._runtimes[ws.id] = SemanticRuntime(warm=self._warm)
            return self._runtimes[ws.id]

    def needs_vectors(self, conn: apsw.Connection, ws: Workspace) -> bool:
        return self.of(ws).needs_vectors(conn, ws)
