"""The ``embeddings`` table (one vector per workspace, model and chunk text, as float32 and as packed sign bits)
and ``model_checks`` (a remote model's vector for a fixed text, to notice the model behind a name changing);
the semantic state a workspace's vectors put it in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

import apsw
import numpy as np


class SemanticState(StrEnum):
    OFF = "off"  # no embedding model configured
    READY = "ready"  # every chunk text has a vector of the configured model
    PARTIAL = "partial"  # the configured model is filling
    SWITCHING = "switching"  # a new model is filling; the search uses none meanwhile


def sign_bits(vectors: np.ndarray) -> np.ndarray:
    """1 bit per dimension (positive -> 1), packed little-endian into bytes: 48 bytes for 384 dims."""
    return np.packbits(vectors > 0, axis=-1, bitorder="little")


def counts(conn: apsw.Connection, ws_id: int, model_fp: str) -> tuple[int, int]:
    """(distinct chunk texts with a vector for this model, distinct chunk texts)."""
    total = conn.execute("SELECT COUNT(DISTINCT text_hash) FROM chunks WHERE ws_id = ?", (ws_id,)).fetchone()[0]
    embedded = conn.execute(
        "SELECT COUNT(*) FROM (SELECT DISTINCT text_hash FROM chunks WHERE ws_id = ?) c "
        "JOIN embeddings e ON e.ws_id = ? AND e.model_fp = ? AND e.text_hash = c.text_hash",
        (ws_id, ws_id, model_fp),
    ).fetchone()[0]
    return embedded, total


# INDEXED BY: left to itself SQLite picks chunks_hash and sorts every missing chunk for each batch, a cost that
# grows with the workspace; walking chunks_doc from the cursor reads only what the batch needs.
MISSING_TEXTS_SQL = (
    "SELECT c.text_hash, c.breadcrumb, c.body, c.doc_id FROM chunks c INDEXED BY chunks_doc "
    "WHERE c.ws_id = ? AND c.doc_id >= ? "
    "AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.ws_id = c.ws_id AND e.model_fp = ? "
    "AND e.text_hash = c.text_hash) ORDER BY c.doc_id, c.ord LIMIT ?"
)


def missing_texts(conn: apsw.Connection, ws_id: int, model_fp: str, from_document: int,
                  limit: int) -> Iterable[tuple[str, str, str, int]]:
    """(text hash, breadcrumb, body, document id) of up to ``limit`` chunks without a vector for this model,
    in document order from ``from_document``."""
    return conn.execute(MISSING_TEXTS_SQL, (ws_id, from_document, model_fp, limit))


def missing_texts_of(conn: apsw.Connection, ws_id: int, model_fp: str, paths: list[str],
                     limit: int) -> list[tuple[str, str, str, int]]:
    """As ``missing_texts``, from the documents at these paths only, the first path's texts first."""
    if not paths:
        return []
    ranks = ",".join("(?, ?)" for _ in paths)
    return list(conn.execute(
        f"WITH wanted(path, rank) AS (VALUES {ranks}) "
        "SELECT c.text_hash, c.breadcrumb, c.body, c.doc_id FROM wanted w "
        "JOIN documents d ON d.ws_id = ? AND d.path = w.path JOIN chunks c ON c.doc_id = d.id "
        "WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
        "WHERE e.ws_id = c.ws_id AND e.model_fp = ? AND e.text_hash = c.text_hash) ORDER BY w.rank, c.ord LIMIT ?",
        (*[value for rank, path in enumerate(paths) for value in (path, rank)], ws_id, model_fp, limit)))


def insert(conn: apsw.Connection, ws_id: int, model_fp: str, hashes: list[str], vectors: np.ndarray) -> None:
    """The vectors of these texts, each stored with its sign bits (a vector already stored stays)."""
    bits = sign_bits(vectors)
    conn.executemany(
        "INSERT OR IGNORE INTO embeddings(ws_id, model_fp, text_hash, bits_bytes, f32_bytes) VALUES (?,?,?,?,?)",
        [(ws_id, model_fp, h, bits[i].tobytes(), vectors[i].astype(np.float32).tobytes())
         for i, h in enumerate(hashes)],
    )


def drop_model(conn: apsw.Connection, ws_id: int, model_fp: str) -> int:
    """Delete the model's vectors; how many there were."""
    dropped = conn.execute("SELECT COUNT(*) FROM embeddings WHERE ws_id = ? AND model_fp = ?",
                           (ws_id, model_fp)).fetchone()[0]
    conn.execute("DELETE FROM embeddings WHERE ws_id = ? AND model_fp = ?", (ws_id, model_fp))
    return dropped


def keep_only_model(conn: apsw.Connection, ws_id: int, model_fp: str) -> None:
    """Delete the vectors and model checks of every other model."""
    conn.execute("DELETE FROM embeddings WHERE ws_id = ? AND model_fp <> ?", (ws_id, model_fp))
    conn.execute("DELETE FROM model_checks WHERE ws_id = ? AND model_fp <> ?", (ws_id, model_fp))


def drop_unused(conn: apsw.Connection, ws_id: int, model_fp: str) -> None:
    """Delete the model's vectors of texts no chunk holds any more."""
    conn.execute(
        "DELETE FROM embeddings WHERE ws_id = ? AND model_fp = ? AND text_hash NOT IN "
        "(SELECT text_hash FROM chunks WHERE ws_id = ?)",
        (ws_id, model_fp, ws_id),
    )


def remove_workspace(conn: apsw.Connection, ws_id: int) -> None:
    conn.execute("DELETE FROM embeddings WHERE ws_id = ?", (ws_id,))
    conn.execute("DELETE FROM model_checks WHERE ws_id = ?", (ws_id,))


# -- model checks --------------------------------------------------------------------------


def model_check(conn: apsw.Connection, ws_id: int, model_fp: str) -> tuple[bytes] | None:
    """The stored check row (its vector's bytes), or None."""
    return conn.execute("SELECT vector FROM model_checks WHERE ws_id = ? AND model_fp = ?",
                        (ws_id, model_fp)).fetchone()


def set_model_check(conn: apsw.Connection, ws_id: int, model_fp: str, vector: np.ndarray) -> None:
    conn.execute("INSERT OR REPLACE INTO model_checks(ws_id, model_fp, vector) VALUES (?, ?, ?)",
                 (ws_id, model_fp, vector.tobytes()))


# -- what a vector index holds -------------------------------------------------------------


def chunk_vectors(conn: apsw.Connection, ws_id: int, model_fp: str) -> list[tuple[int, int, str, int]]:
    """(chunk id, document id, text hash, embedding id) of every chunk with a vector for this model."""
    return conn.execute(
        "SELECT c.id, c.doc_id, c.text_hash, e.id FROM chunks c JOIN embeddings e "
        "ON e.ws_id = c.ws_id AND e.model_fp = ? AND e.text_hash = c.text_hash WHERE c.ws_id = ?",
        (model_fp, ws_id),
    ).fetchall()


def incomplete_documents(conn: apsw.Connection, ws_id: int, model_fp: str,
                         among: Iterable[int] | None = None) -> set[int]:
    """The documents (of ``among`` when given) with a chunk that has no vector for this model."""
    if among is None:
        return {r[0] for r in conn.execute(
            "SELECT c.doc_id FROM chunks c LEFT JOIN embeddings e "
            "ON e.ws_id = c.ws_id AND e.model_fp = ? AND e.text_hash = c.text_hash "
            "WHERE c.ws_id = ? AND e.id IS NULL GROUP BY c.doc_id",
            (model_fp, ws_id),
        )}
    found: set[int] = set()
    docs = sorted(among)
    for start in range(0, len(docs), 500):
        part = docs[start : start + 500]
        marks = ",".join("?" * len(part))
        found.update(r[0] for r in conn.execute(
            f"SELECT DISTINCT c.doc_id FROM chunks c INDEXED BY chunks_doc WHERE c.doc_id IN ({marks}) AND c.ws_id = ? "
            "AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.ws_id = c.ws_id AND e.model_fp = ? "
            "AND e.text_hash = c.text_hash)", (*part, ws_id, model_fp)))
    return found


@dataclass(frozen=True)
class VectorBasis:
    """What a workspace's vectors in memory were read from: its chunks (the generation every index run moves,
    their count) and this model's vectors (how many, the largest id). Vectors added since have larger ids."""

    generation: int
    chunks: int
    vectors: int
    last_id: int


def vectors_after(conn: apsw.Connection, ws_id: int, model_fp: str, last_id: int) -> int:
    """How many of this model's vectors have an id above ``last_id``."""
    return conn.execute("SELECT COUNT(*) FROM embeddings NOT INDEXED WHERE id > ? AND ws_id = ? AND model_fp = ?",
                        (last_id, ws_id, model_fp)).fetchone()[0]


def vector_basis(conn: apsw.Connection, ws_id: int, model_fp: str) -> VectorBasis:
    generation = conn.execute("SELECT next_generation FROM workspaces WHERE id = ?", (ws_id,)).fetchone()
    chunks = conn.execute("SELECT COUNT(*) FROM chunks WHERE ws_id = ?", (ws_id,)).fetchone()[0]
    vectors, last_id = conn.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM embeddings "
                                    "WHERE ws_id = ? AND model_fp = ?", (ws_id, model_fp)).fetchone()
    return VectorBasis(generation[0] if generation else -1, chunks, vectors, last_id)


def chunk_vectors_after(conn: apsw.Connection, ws_id: int, model_fp: str,
                        last_id: int) -> list[tuple[int, int, str, int]]:
    """As ``chunk_vectors``, for the vectors with an id above ``last_id`` only: along the rowid from there (left to
    itself SQLite walks every chunk of the workspace and looks each one's vector up)."""
    return conn.execute(
        "SELECT c.id, c.doc_id, c.text_hash, e.id FROM embeddings e NOT INDEXED "
        "CROSS JOIN chunks c INDEXED BY chunks_hash ON c.ws_id = e.ws_id AND c.text_hash = e.text_hash "
        "WHERE e.id > ? AND e.ws_id = ? AND e.model_fp = ?",
        (last_id, ws_id, model_fp),
    ).fetchall()


def blobs(conn: apsw.Connection, embedding_ids: list[int]) -> dict[int, tuple[bytes, bytes]]:
    """Embedding id -> (sign bits, float32 bytes), for those of these ids that exist."""
    found: dict[int, tuple[bytes, bytes]] = {}
    for start in range(0, len(embedding_ids), 500):
        part = embedding_ids[start : start + 500]
        marks = ", ".join("?" * len(part))
        for emb, bits, f32 in conn.execute(
            f"SELECT id, bits_bytes, f32_bytes FROM embeddings WHERE id IN ({marks})", part
        ):
            found[emb] = (bits, f32)
    return found
