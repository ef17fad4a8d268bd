"""Filling a workspace's vectors in the background, and the semantic state it leads to.

Vectors are keyed by (workspace, model_fp, text_hash): identical sections share one row, and an
edit re-embeds only the chunks whose text changed. A workspace's ``active_model_fp`` is the model
whose vectors were last complete; a newly configured model fills in the background and becomes
active only once every chunk has a vector ("switching" until then).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import apsw
import numpy as np

from autodoc_core.index import checkpoints
from autodoc_core.index.fill_rate import FillRate, FillWindow
from autodoc_core.index.wanted import WantedDocuments
from autodoc_core.providers.embedders import DEFAULT_EMBEDDER, Embedder
from autodoc_core.providers.http import ProviderError
from autodoc_core.store import embeddings
from autodoc_core.store import workspace as workspaces
from autodoc_core.store.database import Store
from autodoc_core.store.embeddings import SemanticState, counts

# What a section sends to the model at most. Models read 256-8,192 tokens; a section with one huge line, or
# a large section_tokens, would otherwise go whole, past a server's payload or context limit.
MAX_TEXT_CHARS = 6000
# A server's answer to a request it will not take as sent (payload too large, input too long).
REFUSED_STATUS = {400, 413, 422}
# The text whose vector tells whether a remote model is still the one the vectors were made with.
MODEL_CHECK_TEXT = "AutoDoc model check: why we keep design decisions in Markdown, next to the code."
SAME_MODEL_COSINE = 0.98


@dataclass
class Progress:
    """A workspace's fill as this process runs it. Its pace (rate, time left) is the window's alone, from the
    database's count whoever embeds: status and the fill's own answer give the same figures."""

    model_fp: str = ""
    embedded: int = 0
    total: int = 0
    done_this_run: int = 0
    error: str | None = None
    heading_only: int = 0  # sections the server refused, embedded from their heading alone (this run)
    refused: str | None = None  # the server's reason, for the last of them
    model_replaced: str | None = None  # what check_model found, when the server's model changed
    window: FillWindow = field(default_factory=FillWindow)  # the workspace's, shared with status
    pace: FillRate | None = None  # the window's answer to the latest count

    def counted(self) -> None:
        """The count moved here: a sample for the workspace's rate (which status reads too)."""
        self.pace = self.window.observe(self.model_fp, self.embedded, self.total)

    def as_dict(self, pace: FillRate | None = None) -> dict[str, Any]:
        """``pace``: a later count (status reads the database's), else this fill's latest."""
        pace = pace or self.pace or FillRate(self.embedded, self.total, 0.0, None)
        return {"model_fp": self.model_fp, "embedded": pace.embedded, "total": pace.total, **pace.as_dict(),
                "error": self.error, "heading_only": self.heading_only, "refused": self.refused,
                "model_replaced": self.model_replaced}


def semantic_state(progress: tuple[int, int], model_fp: str | None, active_fp: str | None) -> SemanticState:
    """The state from ``counts()``'s (embedded, total) and which model is active."""
    if not model_fp:
        return SemanticState.OFF
    embedded, total = progress
    if embedded >= total:
        return SemanticState.READY
    if active_fp and active_fp != model_fp:
        return SemanticState.SWITCHING
    return SemanticState.PARTIAL


def fill(store: Store, ws_id: int, embedder: Embedder, progress: Progress,
         stop: Callable[[], bool] | None = None, wanted: WantedDocuments | None = None,
         stored: Callable[[], None] | None = None) -> bool:
    """Embed every chunk text that lacks a vector for this model. True when complete. The documents
    ``wanted`` names (a search's hits, open buffers) go first, each batch asking again. ``stored`` is
    called after each batch's commit, outside the lease.

    Works one provider batch at a time and stores each before asking for the next, so a provider
    that fails (or a process killed mid-fill) keeps what it already answered. ``stop`` is asked
    before every batch. Raises ProviderError.
    """
    try:
        embedder.probe()
        check_model(store, ws_id, embedder, progress)
    except ProviderError as exc:
        progress.error = exc.reason
        raise
    fingerprint = embedder.model_fp
    progress.model_fp = fingerprint
    with store.snapshot() as conn:
        progress.embedded, progress.total = counts(conn, ws_id, fingerprint)
    progress.counted()
    from_document = 0
    while not (stop and stop()):
        # The lease is held from choosing the texts to storing their vectors: held only around the store, it
        # lapsed during a slow batch and another process's filler embedded the same texts (two editors paid
        # for each text twice). A process that wants the lease gets it between batches.
        with store.lease.hold():
            with store.snapshot() as conn:
                if not _configured(conn, ws_id, embedder.config):  # re-configured (here or elsewhere): stop now
                    return False
                missing = _wanted_texts(conn, ws_id, fingerprint, wanted, embedder.batch_size)
                if not missing:
                    missing = _missing_texts(conn, ws_id, fingerprint, from_document, embedder.batch_size)
                    if missing:
                        from_document = missing[-1][3]
            if not missing and from_document:  # once more from the start: an edit adds chunks to earlier documents
                from_document = 0
                continue
            if not missing:
                return _activate(store, ws_id, fingerprint, embedder.config)
            _embed_and_store(store, ws_id, fingerprint, embedder, missing, progress)
        checkpoints.reached("embed.batch")  # after the batch's commit
        if stored is not None:
            stored()
        progress.embedded += len(missing)
        progress.done_this_run += len(missing)
        progress.counted()
    return False


def _wanted_texts(conn: apsw.Connection, ws_id: int, fingerprint: str, wanted: WantedDocuments | None,
                  size: int) -> list[tuple[str, str, str, int]]:
    """Texts without a vector in the wanted documents; those found complete leave the list."""
    paths = wanted.paths(ws_id) if wanted is not None else []
    if not paths:
        return []
    rows = embeddings.missing_texts_of(conn, ws_id, fingerprint, paths, size * 2)
    distinct: dict[str, tuple[str, str, str, int]] = {}
    for row in rows:
        distinct.setdefault(row[0], row)
    if len(rows) < size * 2 and len(distinct) <= size:  # all of these documents' missing texts are in this batch
        wanted.done(ws_id, paths)
    return list(distinct.values())[:size]


def _missing_texts(conn: apsw.Connection, ws_id: int, fingerprint: str, from_document: int,
                   size: int) -> list[tuple[str, str, str, int]]:
    """Up to ``size`` distinct chunk texts without a vector for this model (hash, breadcrumb, body, document
    id), in document order from ``from_document``: a search uses a document only once all of its chunks
    have vectors, and texts in hash order left every document incomplete until the fill's last minutes.
    Reading on from the last batch's document (along the chunks_doc index) keeps each batch's query short on a
    large workspace."""
    rows = embeddings.missing_texts(conn, ws_id, fingerprint, from_document, size * 2)
    distinct: dict[str, tuple[str, str, str, int]] = {}
    for row in rows:
        distinct.setdefault(row[0], row)
    return list(distinct.values())[:size]


def _embed_and_store(store: Store, ws_id: int, fingerprint: str, embedder: Embedder,
                     missing: list[tuple[str, str, str, int]], progress: Progress) -> None:
    texts = [(f"{crumb}\n{body}" if body else crumb)[:MAX_TEXT_CHARS] for _, crumb, body, _ in missing]
    try:
        vectors = _embed_isolating(embedder, texts, [crumb for _, crumb, _, _ in missing], progress)
    except ProviderError as exc:
        progress.error = exc.reason
        raise
    progress.error = None
    _store_vectors(store, ws_id, fingerprint, [h for h, _, _, _ in missing], vectors)


def check_model(store: Store, ws_id: int, embedder: Embedder, progress: Progress) -> None:
    """Once per process and workspace, ask a remote model for the vector of a fixed text and compare it with
    the one stored when the workspace's vectors were made. A server that now runs another model behind the
    same name and dimensions (a TEI container or a proxy's alias re-pointed) answers another vector: the
    workspace's vectors for that name are dropped, to be made again, instead of being compared with
    queries the new model embeds."""
    if not embedder.remote or ws_id in embedder.checked_for:
        return
    vector = embedder.embed([MODEL_CHECK_TEXT], "document")[0].astype(np.float32)
    fingerprint = embedder.model_fp
    with store.write() as conn:
        row = embeddings.model_check(conn, ws_id, fingerprint)
        same = row is not None and _same_model(np.frombuffer(row[0], dtype=np.float32), vector)
        if row is not None and not same:
            dropped = embeddings.drop_model(conn, ws_id, fingerprint)
            workspaces.bump_epoch(conn, ws_id)  # every process's VectorIndex sees the new check row and lets go of them
            progress.model_replaced = (
                f"the server's model behind {fingerprint} changed (its vector for a fixed text moved); "
                f"its {dropped} vectors were dropped and are made again")
        if not same:
            embeddings.set_model_check(conn, ws_id, fingerprint, vector)
    embedder.checked_for.add(ws_id)


def _same_model(stored: np.ndarray, vector: np.ndarray) -> bool:
    """One model answers the same text with the same vector up to float noise (another GPU, fp16: cosine
    above 0.999); two models' vectors for it are unrelated."""
    if stored.shape != vector.shape:
        return False
    norms = float(np.linalg.norm(stored) * np.linalg.norm(vector))
    return norms > 0 and float(stored @ vector) / norms >= SAME_MODEL_COSINE


def _embed_isolating(embedder: Embedder, texts: list[str], headings: list[str], progress: Progress) -> np.ndarray:
    """The batch's vectors. A batch the server refuses as sent (400, 413, 422) is halved until the text it
    refuses is found; that section gets the vector of its heading alone, and the rest of the workspace
    fills. Without this, the same batch came first again after every back-off and nothing after it was
    ever embedded."""
    try:
        return embedder.embed(texts, "document")
    except ProviderError as exc:
        if exc.status not in REFUSED_STATUS:
            raise
        if len(texts) > 1:
            middle = len(texts) // 2
            return np.vstack([_embed_isolating(embedder, texts[:middle], headings[:middle], progress),
                              _embed_isolating(embedder, texts[middle:], headings[middle:], progress)])
        vector = embedder.embed([headings[0][:MAX_TEXT_CHARS]], "document")  # refused too: a real fault
        progress.heading_only += 1
        progress.refused = exc.reason
        return vector


def _store_vectors(store: Store, ws_id: int, fingerprint: str, hashes: list[str], vectors: np.ndarray) -> None:
    """Store a batch's vectors, unless the workspace was removed while the provider answered (another thread
    of this process shares the lease): its rows would stay, unowned, for good."""
    with store.write() as conn:
        if not workspaces.exists(conn, ws_id):
            return
        embeddings.insert(conn, ws_id, fingerprint, hashes, vectors)
        workspaces.bump_epoch(conn, ws_id)
        checkpoints.reached("embed.write")  # inside the batch's transaction


def _activate(store: Store, ws_id: int, fingerprint: str, config: dict[str, Any]) -> bool:
    """The model is complete: make it active and drop vectors of other models and of deleted text.
    False when the workspace was re-configured to another model while this one filled: activating it
    would delete the vectors of the model the user chose."""
    with store.write() as conn:
        if not _configured(conn, ws_id, config):
            return False
        if workspaces.active_model(conn, ws_id) != fingerprint:
            workspaces.set_active_model(conn, ws_id, fingerprint)
            embeddings.keep_only_model(conn, ws_id, fingerprint)
            workspaces.bump_epoch(conn, ws_id)
        embeddings.drop_unused(conn, ws_id, fingerprint)
    return True


def _configured(conn: apsw.Connection, ws_id: int, config: dict[str, Any]) -> bool:
    """The workspace exists and still names this embedder: a fill of a model the user has replaced since
    stops at its next batch (it went on to the end, hours on a large workspace, before the new one began)."""
    stored = workspaces.stored_config(conn, ws_id)
    return stored is not None and _canonical(stored.get("embedder", DEFAULT_EMBEDDER)) == _canonical(config)


def _canonical(config: Any) -> str:
    return json.dumps(config, sort_keys=True)
