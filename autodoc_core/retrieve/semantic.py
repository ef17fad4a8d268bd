"""The semantic retriever's vector index. A 1-bit Hamming prefilter over packed codes, then exact float32
cosine on the shortlist.

Each workspace's vectors for its active model live in contiguous numpy arrays, loaded once and
refreshed incrementally (only new rows are read from SQLite) when the workspace's
``vector_epoch`` moves. Only chunks of documents whose every chunk has a vector are eligible.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import apsw
import numpy as np

from autodoc_core.store import embeddings
from autodoc_core.store.embeddings import sign_bits

LOG = logging.getLogger("autodoc.semantic")

CANDIDATES = 50
# Shortlist for the exact rescore. Measured on SciFact train (make bench): 400 keeps the exact
# cosine top-50 almost whole; the benchmark reports the prefilter's recall.
SHORTLIST = 400
SCAN_BLOCK = 1 << 16  # codes per block of the Hamming scan (measured: 2^15..2^17 alike, 2^20 slower)
# Threads for one scan (the caller and helpers): its blocks are independent, and numpy releases the GIL.
SCAN_WORKERS = max(1, min(os.cpu_count() or 1, 4))


def to_words(bits: np.ndarray) -> np.ndarray:
    """Packed bytes as uint64 words, padded to a multiple of 8 bytes."""
    padded_width = -(-bits.shape[-1] // 8) * 8
    if padded_width != bits.shape[-1]:
        pad = np.zeros((*bits.shape[:-1], padded_width - bits.shape[-1]), dtype=np.uint8)
        bits = np.concatenate([bits, pad], axis=-1)
    return np.ascontiguousarray(bits).view(np.uint64)


def hamming_distances(codes: np.ndarray, query_words: np.ndarray,
                      workers: int = SCAN_WORKERS) -> tuple[np.ndarray, np.ndarray]:
    """Hamming distance of every code (column of ``codes``: [words, n]) to the query, and the
    histogram of those distances.

    Works in cache-sized blocks with preallocated buffers: every code word is read from memory
    once and no full-size temporary is written (a plain ``(codes ^ q)`` made four). Threads pull
    blocks from one shared queue (numpy releases the GIL in these loops), so a thread that gets
    no core simply takes fewer blocks.
    """
    words, count = codes.shape
    distance = np.empty(count, dtype=np.uint16)
    blocks = iter(range(0, count, SCAN_BLOCK))  # next() on it is atomic under the GIL

    def scan() -> np.ndarray:
        histogram = np.zeros(words * 64 + 1, dtype=np.int64)
        size = min(SCAN_BLOCK, count)
        xor, ones, group = (np.empty(size, dtype=np.uint64), np.empty(size, dtype=np.uint8),
                            np.empty(size, dtype=np.uint8))
        for start in blocks:
            stop = min(start + SCAN_BLOCK, count)
            n = stop - start
            block = distance[start:stop]
            block.fill(0)
            # Three words hold at most 192 set bits, so their counts add up in uint8 (fast);
            # only the group sums are widened.
            for first in range(0, words, 3):
                for offset, word in enumerate(codes[first : first + 3]):
                    np.bitwise_xor(word[start:stop], query_words[first + offset], out=xor[:n])
                    np.bitwise_count(xor[:n], out=group[:n] if offset == 0 else ones[:n])
                    if offset:
                        np.add(group[:n], ones[:n], out=group[:n])
                np.add(block, group[:n], out=block)
            histogram += np.bincount(block, minlength=histogram.size)
        return histogram

    helpers = [_scan_pool().submit(scan) for _ in range(min(workers, -(-count // SCAN_BLOCK)) - 1)]
    histogram = scan()
    for helper in helpers:
        histogram += helper.result()
    return distance, histogram


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _scan_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, SCAN_WORKERS - 1), thread_name_prefix="autodoc-scan")
        return _pool


@dataclass
class Recall:
    chunk_ids: list[int]
    cosines: dict[int, float]
    scanned: int
    shortlist: int


def _text_key(text_hash: str) -> int:
    """A chunk text's hash as an int64 (its first 60 bits): which text a held vector is of."""
    return int(text_hash[:15], 16)


class VectorIndex:
    """One workspace's vectors for one model, held in memory."""

    def __init__(self, ws_id: int, model_fp: str) -> None:
        self.ws_id = ws_id
        self.model_fp = model_fp
        self.epoch = -1
        self.chunk_ids = np.zeros(0, dtype=np.int64)
        self.doc_ids = np.zeros(0, dtype=np.int64)
        self.text_keys = np.zeros(0, dtype=np.int64)  # which text each vector is of (see _text_key)
        self.model_stamp: tuple | None = None  # the model check the held vectors were made under
        self.codes = np.zeros((0, 0), dtype=np.uint64)  # [words, n]: one contiguous row per word
        self.vectors = np.zeros((0, 0), dtype=np.float32)
        self.eligible = np.zeros(0, dtype=bool)
        self.lock = threading.Lock()
        self._sorted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (chunk_ids, sorted, order)
        self._counted: tuple[np.ndarray, int, bool] | None = None  # (eligible, how many, all of them)
        self._incomplete: set[int] = set()  # documents with a chunk that has no vector yet
        self._basis: embeddings.VectorBasis | None = None  # what the held arrays were read from

    def __len__(self) -> int:
        return self._eligible_counts()[0]

    def _eligible_counts(self) -> tuple[int, bool]:
        """How many vectors are eligible, and whether all are: counted once per ``eligible`` array (a search
        asked twice, a pass over a million flags each time). ``eligible`` is replaced, never changed in place."""
        counted = self._counted
        if counted is None or counted[0] is not self.eligible:
            counted = self._counted = (self.eligible, int(self.eligible.sum()), bool(self.eligible.all()))
        return counted[1], counted[2]

    def refresh(self, conn: apsw.Connection, epoch: int) -> None:
        with self.lock:
            if epoch == self.epoch:
                return
            stamp = embeddings.model_check(conn, self.ws_id, self.model_fp)
            basis = embeddings.vector_basis(conn, self.ws_id, self.model_fp)
            if stamp == self.model_stamp and self._only_added(conn, basis):
                self._add_new(conn, basis, epoch)
                return
            self._reload(conn, epoch, stamp, basis)

    def _only_added(self, conn: apsw.Connection, basis: embeddings.VectorBasis) -> bool:
        """Since the last refresh, only vectors of this model were added (a fill's batch): no chunk changed,
        none of its vectors went, so the new ones are those with a larger id."""
        held = self._basis
        return (held is not None and basis.generation == held.generation and basis.chunks == held.chunks
                and basis.vectors - held.vectors
                == embeddings.vectors_after(conn, self.ws_id, self.model_fp, held.last_id))

    def _add_new(self, conn: apsw.Connection, basis: embeddings.VectorBasis, epoch: int) -> None:
        """A fill's batches since the last refresh: read their vectors alone, and whether the documents they
        touch are now complete. During a fill a search used to read every vector row and scan every chunk for
        incomplete documents after each batch (tens of ms on the RFCs' 12,499 sections)."""
        held = self._basis
        assert held is not None
        new = [(chunk, doc, _text_key(text_hash), emb) for chunk, doc, text_hash, emb
               in embeddings.chunk_vectors_after(conn, self.ws_id, self.model_fp, held.last_id)]
        complete = self._append(conn, new) if new else True
        touched = {doc for _, doc, _, _ in new}
        self._incomplete = (self._incomplete - touched) | embeddings.incomplete_documents(
            conn, self.ws_id, self.model_fp, touched)
        self._set_eligible()
        self._basis = basis if complete else None  # a vector that could not be read: read everything next time
        self.epoch = epoch if complete else -1

    def _set_eligible(self) -> None:
        incomplete = self._incomplete
        self.eligible = ~np.isin(self.doc_ids, np.fromiter(incomplete, dtype=np.int64, count=len(incomplete)))

    def _reload(self, conn: apsw.Connection, epoch: int, stamp: tuple | None, basis: embeddings.VectorBasis) -> None:
        if stamp != self.model_stamp:  # the model behind the name was replaced: every held vector is its
            self._compact(np.zeros(len(self.chunk_ids), dtype=bool))  # predecessor's (vectors.check_model)
            self.model_stamp = stamp
        rows = embeddings.chunk_vectors(conn, self.ws_id, self.model_fp)
        current = {chunk: (doc, _text_key(text_hash), emb) for chunk, doc, text_hash, emb in rows}
        # SQLite hands a deleted row's id to the next row inserted, for chunks and embeddings alike: the
        # same chunk id (and document) with other text is a new vector, not the one held.
        keep = np.array([current.get(int(c), (None, None))[:2] == (int(d), int(k)) for c, d, k in
                         zip(self.chunk_ids, self.doc_ids, self.text_keys, strict=True)], dtype=bool)
        known = set(self.chunk_ids[keep].tolist())
        new = [(chunk, doc, key, emb) for chunk, (doc, key, emb) in current.items() if chunk not in known]
        self._compact(keep)
        complete = self._append(conn, new) if new else True
        self._incomplete = embeddings.incomplete_documents(conn, self.ws_id, self.model_fp)
        self._set_eligible()
        self._basis = basis if complete else None
        self.epoch = epoch if complete else -1  # -1: the next search reads what is missing again

    def _compact(self, keep: np.ndarray) -> None:
        if keep.all():
            return
        self._sorted = None
        self.chunk_ids = self.chunk_ids[keep]
        self.doc_ids = self.doc_ids[keep]
        self.text_keys = self.text_keys[keep]
        self.codes = np.ascontiguousarray(self.codes[:, keep])
        self.vectors = self.vectors[keep]

    def _append(self, conn: apsw.Connection, new: list[tuple[int, int, int, int]]) -> bool:
        """Add the rows' vectors; False when some vector listed a moment ago could not be read (seen once
        in a host whose fill was writing, cause not found): those chunks are left out, not fatal."""
        blobs = embeddings.blobs(conn, sorted({emb for _, _, _, emb in new}))
        readable = [row for row in new if row[3] in blobs]
        if len(readable) < len(new):
            LOG.warning("%d of %d new vectors could not be read (autocommit %s); left out until the next search",
                        len(new) - len(readable), len(new), conn.getautocommit())
        if not readable:
            return False
        complete, new = len(readable) == len(new), readable
        vectors = np.vstack([np.frombuffer(blobs[emb][1], dtype=np.float32) for _, _, _, emb in new])
        bits = np.vstack([np.frombuffer(blobs[emb][0], dtype=np.uint8) for _, _, _, emb in new])
        words = to_words(bits).T
        if self.vectors.size == 0:
            self.vectors = vectors.copy()
            self.codes = np.ascontiguousarray(words)
        else:
            self.vectors = np.vstack([self.vectors, vectors])
            self.codes = np.ascontiguousarray(np.hstack([self.codes, words]))
        self._sorted = None
        self.chunk_ids = np.concatenate([self.chunk_ids, np.array([c for c, _, _, _ in new], dtype=np.int64)])
        self.doc_ids = np.concatenate([self.doc_ids, np.array([d for _, d, _, _ in new], dtype=np.int64)])
        self.text_keys = np.concatenate([self.text_keys, np.array([k for _, _, k, _ in new], dtype=np.int64)])
        return complete

    def search(self, query: np.ndarray, allowed_docs: np.ndarray | None, k: int = CANDIDATES,
               shortlist: int = SHORTLIST) -> Recall:
        with self.lock:
            everything = allowed_docs is None and self._eligible_counts()[1]
            mask = None if everything else self.eligible
            if allowed_docs is not None:
                mask = mask & np.isin(self.doc_ids, allowed_docs)
            scanned = self.eligible.size if everything else int(mask.sum())
            if scanned == 0:
                return Recall([], {}, 0, 0)
            if scanned > shortlist:
                candidates = self._prefilter(query, None if everything else np.flatnonzero(mask), shortlist)
            else:
                candidates = np.arange(scanned) if everything else np.flatnonzero(mask)
            cosines = self.vectors[candidates] @ query
            top = np.argsort(-cosines)[:k]
            chosen = candidates[top]
            ids = self.chunk_ids[chosen].tolist()
            return Recall(ids, dict(zip(ids, cosines[top].tolist(), strict=True)), scanned, len(candidates))

    def _prefilter(self, query: np.ndarray, candidates: np.ndarray | None, shortlist: int) -> np.ndarray:
        """Positions of the ``shortlist`` (a few more on ties) codes nearest the query's in Hamming
        distance; ``candidates`` None means every position."""
        query_words = to_words(sign_bits(query[None, :]))[0]
        codes = self.codes if candidates is None else self.codes[:, candidates]
        distance, counts = hamming_distances(codes, query_words)
        # A histogram threshold instead of a partial sort: cut where the running count passes
        # the shortlist size.
        threshold = int(np.searchsorted(np.cumsum(counts), shortlist))
        positions = np.flatnonzero(distance <= threshold)
        return positions if candidates is None else candidates[positions]

    def exact_cosines(self, query: np.ndarray, chunk_ids: list[int]) -> dict[int, float]:
        """Cosine for specific chunks (lexical hits the semantic top-k missed), for linear fusion."""
        with self.lock:
            positions = self._positions(np.asarray(chunk_ids, dtype=np.int64))
            positions = positions[self.eligible[positions]]
            if not positions.size:
                return {}
            values = self.vectors[positions] @ query
            return dict(zip(self.chunk_ids[positions].tolist(), values.tolist(), strict=True))

    def vectors_of(self, chunk_ids: list[int]) -> np.ndarray:
        """The held vectors of these chunks (their documents need not be fully embedded), one row each, in
        index order; no row for a chunk without one."""
        with self.lock:
            positions = self._positions(np.asarray(chunk_ids, dtype=np.int64))
            return self.vectors[positions].copy()

    def _positions(self, chunk_ids: np.ndarray) -> np.ndarray:
        """The index positions of those of these chunks it holds, in index order: a binary search in a sorted
        copy of the ids, sorted again only when the ids change (``np.isin`` over every id took 6 ms a query at
        260,000 chunks; sorting the mostly ordered ids takes 3-5 ms at 1,000,000, once per refresh). The ids are
        replaced, never changed in place, so the copy is known stale when ``chunk_ids`` is another array."""
        if self._sorted is None or self._sorted[0] is not self.chunk_ids:
            order = np.argsort(self.chunk_ids, kind="stable")
            self._sorted = (self.chunk_ids, self.chunk_ids[order], order)
        _, ids, order = self._sorted
        if not len(ids):
            return np.zeros(0, dtype=np.int64)
        at = np.minimum(np.searchsorted(ids, chunk_ids), len(ids) - 1)
        return np.unique(order[at[ids[at] == chunk_ids]])

    def exact_top(self, query: np.ndarray, k: int = CANDIDATES) -> list[int]:
        """Exact cosine top-k over every eligible vector (the benchmark's reference for the prefilter)."""
        with self.lock:
            candidates = np.flatnonzero(self.eligible)
            cosines = self.vectors[candidates] @ query
            return self.chunk_ids[candidates[np.argsort(-cosines)[:k]]].tolist()
