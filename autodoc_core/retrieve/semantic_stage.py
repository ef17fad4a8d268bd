"""The semantic stage of one search: why it cannot run, embedding the query (in its own thread,
while the lexical stage reads SQLite), and recalling chunks from the workspace's vector index."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import apsw
import numpy as np

from autodoc_core.errors import EMBED_FAILED, UNSUPPORTED
from autodoc_core.errors import SWITCHING as SWITCHING_CODE
from autodoc_core.parse.cjk import mostly_cjk
from autodoc_core.providers.base import Pending
from autodoc_core.providers.embedders import DEFAULT_LOCAL_MODEL, Embedder, LocalEmbedder
from autodoc_core.providers.http import ProviderError
from autodoc_core.retrieve.filters import allowed_documents
from autodoc_core.retrieve.query import ParsedQuery
from autodoc_core.retrieve.semantic import CANDIDATES, SHORTLIST, VectorIndex
from autodoc_core.store.embeddings import SemanticState
from autodoc_core.store.filters import Filters


@dataclass
class SemanticSource:
    """What the engine knows about a workspace's semantic stage at query time."""

    state: SemanticState
    embedder: Embedder | None = None
    index: VectorIndex | None = None
    progress: tuple[int, int] = (0, 0)  # chunk texts embedded, total
    unavailable: str | None = None  # why a configured model cannot be used
    failure: str | None = None  # why the remote model could not be reached for this search
    # A search of several workspaces: the query embedded once per model for all of them (QueryVectors).
    shared: QueryVectors | None = None

    def why_not(self) -> tuple[str, int] | None:
        """Why the stage cannot run, with the error code a semantic-only request gets; None if it can."""
        if self.unavailable:
            return self.unavailable, UNSUPPORTED
        if self.failure:
            return f"embedding the query failed: {self.failure}", EMBED_FAILED
        if self.state == SemanticState.OFF or self.embedder is None:
            return "no embedding model is configured for this workspace", UNSUPPORTED
        if self.state == SemanticState.SWITCHING:
            return "a new embedding model is filling", SWITCHING_CODE
        if self.index is None or len(self.index) == 0:
            embedded, total = self.progress
            if total == 0:
                return "the workspace has no indexed sections (not indexed yet, or no Markdown files)", UNSUPPORTED
            return f"no document is fully embedded yet ({embedded} of {total} chunk texts have vectors)", UNSUPPORTED
        return None


_ENGLISH_ONLY = f"the default model ({DEFAULT_LOCAL_MODEL}) is English-only: it does not read Chinese, Japanese, Korean"
_MULTILINGUAL = ("for search by meaning in them, configure a multilingual embedder (such as multilingual-e5 or bge-m3, "
                 "behind TEI or an OpenAI-compatible server)")
ENGLISH_ONLY_SKIP = f"{_ENGLISH_ONLY}: a query mostly in those scripts is searched by its words alone; {_MULTILINGUAL}"
ENGLISH_ONLY_NOTE = (f"{_ENGLISH_ONLY}: found by meaning alone, the hits of a query mostly in those scripts are likely "
                     f"unrelated; {_MULTILINGUAL}")


def english_only_for(query: ParsedQuery, semantic: SemanticSource) -> bool:
    """The query is mostly CJK and the workspace embeds with the default, English-only model: its nearest
    sections would be unrelated (doc/benchmarks/cjk.md measures it)."""
    embedder = semantic.embedder
    return (isinstance(embedder, LocalEmbedder) and embedder.model == DEFAULT_LOCAL_MODEL
            and mostly_cjk(query.semantic_text))


class QueryVectors:
    """One search of several workspaces' query embeddings, by model and text: the workspaces that embed with one
    model wait for one embedding instead of each computing its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: dict[tuple[str, str], Pending[np.ndarray]] = {}

    def get(self, model: str, text: str, start: Callable[[], Pending[np.ndarray]]) -> tuple[Pending[np.ndarray], bool]:
        """The embedding of ``text`` by ``model``, started with ``start`` when no workspace started it; and
        whether this call started it."""
        with self._lock:
            if (model, text) in self._started:
                return self._started[(model, text)], False
            started = self._started[(model, text)] = start()
            return started, True


def start_query_embedding(query: ParsedQuery, semantic: SemanticSource,
                          finished: threading.Event | None = None) -> Pending[np.ndarray] | None:
    """Embed the query in its own thread (both it and the lexical stage release the GIL in their
    inner loops), setting ``finished`` when it ends; None when the stage cannot run. With ``semantic.shared``, a
    workspace of the same model that started it already is waited for instead."""
    if semantic.why_not() is not None or semantic.embedder is None:
        return None
    embedder = semantic.embedder
    text = query.semantic_text or query.raw or " "
    if semantic.shared is not None and embedder.model_fp:
        first, started = semantic.shared.get(embedder.model_fp, text, lambda: _embedding(embedder, text, finished))
        return first if started else _waiting(first, finished)
    return _embedding(embedder, text, finished)


def _waiting(first: Pending[np.ndarray], finished: threading.Event | None) -> Pending[np.ndarray]:
    def wait() -> np.ndarray:
        try:
            return first.result()
        finally:
            if finished is not None:
                finished.set()

    return Pending(wait, name="autodoc-query-embedding-shared")


def _embedding(embedder: Embedder, text: str, finished: threading.Event | None) -> Pending[np.ndarray]:
    def embed() -> np.ndarray:
        try:
            return embedder.embed([text], "query")[0]
        finally:
            if finished is not None:
                finished.set()

    return Pending(embed, name="autodoc-query-embedding")


@dataclass
class QueryVector:
    """The collected query embedding, or why there is none (reason and error code)."""

    vector: np.ndarray | None
    failure: tuple[str, int] | None = None
    embed_ms: float | None = None  # how long the embedding itself took


def collect(embedding: Pending[np.ndarray] | None, semantic: SemanticSource, deadline: float) -> QueryVector:
    """The query embedding, waiting for a remote one at most ``deadline`` seconds from its start."""
    if embedding is None:  # it was started only if the stage could run
        return QueryVector(None, semantic.why_not())
    remote = semantic.embedder is not None and semantic.embedder.remote
    try:
        vector = embedding.result(deadline if remote else None, "the embedding provider")
    except ProviderError as exc:
        return QueryVector(None, (f"embedding the query failed: {exc.reason}", EMBED_FAILED))
    return QueryVector(vector, embed_ms=round(embedding.seconds * 1000, 3))


@dataclass
class SemanticResult:
    chunk_ids: list[int] = field(default_factory=list)
    cosines: dict[int, float] = field(default_factory=dict)
    scanned: int = 0
    shortlist: int = 0


def recall(conn: apsw.Connection, ws_id: int, vector: np.ndarray, filters: Filters, index: VectorIndex,
           limit: int) -> SemanticResult:
    """The chunks nearest the query vector among those the filters allow."""
    k = max(CANDIDATES, limit)
    found = index.search(vector, allowed_documents(conn, ws_id, filters), k, max(SHORTLIST, 2 * k))
    return SemanticResult(found.chunk_ids, found.cosines, found.scanned, found.shortlist)
