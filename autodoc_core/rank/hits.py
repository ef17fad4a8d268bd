"""Hits: the rows a hit is made of, the ``Hit`` record (built here, serialised here), and the
shaping every answer gets: at most N hits per document, superseded documents below their
successor, and a snippet around the first query word."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import apsw

from autodoc_core.store import chunks, documents
from autodoc_core.store.filters import Clause

MAX_PER_DOCUMENT = 3
SNIPPET_CHARS = 240


@dataclass(slots=True)
class HitRow:
    """A chunk and its document, as a hit needs them."""

    chunk_id: int
    doc_id: int
    path: str
    breadcrumb: str
    byte_start: int
    byte_end: int
    line_start: int
    line_end: int
    generation: int
    tags: tuple[str, ...]
    inbound_links: int
    successor_id: int | None
    status: str | None
    title: str | None
    kind: str
    successor_path: str | None

    @property
    def superseded(self) -> bool:
        return self.status == "superseded" or self.successor_id is not None


def load_rows(conn: apsw.Connection, chunk_ids: list[int]) -> dict[int, HitRow]:
    """The rows of these chunks that this snapshot has, by chunk id."""
    rows: dict[int, HitRow] = {}
    for raw in chunks.hit_rows(conn, chunk_ids):
        row = HitRow(*raw[:9], _tags(raw[9]), *raw[10:])
        rows[row.chunk_id] = row
    return rows


@dataclass(slots=True)
class FusionRow:
    """What fusing, boosting, capping and demoting read of a chunk; its ``HitRow`` is read only if it is shown."""

    chunk_id: int
    doc_id: int
    kind: str
    tags: tuple[str, ...]
    inbound_links: int
    successor_id: int | None
    status: str | None

    @property
    def superseded(self) -> bool:
        return self.status == "superseded" or self.successor_id is not None


def load_fusion_rows(conn: apsw.Connection, chunk_ids: list[int]) -> dict[int, FusionRow]:
    """The fusion rows of these chunks that this snapshot has, by chunk id (a third of ``load_rows``' cost)."""
    rows: dict[int, FusionRow] = {}
    for chunk_id, doc_id, kind, tags, inbound, successor_id, status in chunks.fusion_rows(conn, chunk_ids):
        rows[chunk_id] = FusionRow(chunk_id, doc_id, kind, _tags(tags), inbound, successor_id, status)
    return rows


@lru_cache(maxsize=4096)
def _tags(stored: str) -> tuple[str, ...]:
    """A document's tags from their JSON: a search reads ~90 rows, mostly of a few documents, and most have
    none; parsing each row's again was a third of ``load_rows``."""
    return tuple(json.loads(stored))


def bodies(conn: apsw.Connection, chunk_ids: list[int]) -> dict[int, str]:
    return chunks.bodies(conn, chunk_ids)


@dataclass(slots=True)
class Hit:
    """One answer line: a section (or, for a facet-only query, a whole document) and how it was found.

    ``doc_id`` and ``successor_id`` order hits and are never sent; ``chunk_id`` is sent for sections."""

    path: str
    title: str | None
    breadcrumb: str | None
    kind: str
    byte_start: int
    byte_end: int
    line_start: int
    line_end: int
    relevance: float
    score: float
    via: tuple[str, ...]
    generation: int
    superseded: bool
    superseded_by: str | None
    doc_id: int
    successor_id: int | None = None
    chunk_id: int | None = None
    snippet: str = ""
    rank_score: float | None = None
    workspace: str | None = None  # its workspace's name, given by the search that shows it (search.scope)
    # Its own BM25 and raw cosine, when a retriever scored it (not sent): a search of several workspaces compares
    # hits of different workspaces by them (search.scope).
    bm25: float | None = None
    cosine: float | None = None
    holds_pasted: bool = False  # holds the pasted identifier or line word for word (fuse.holders_first; not sent)

    def to_dict(self) -> dict[str, Any]:
        """The wire format of a hit (see ``:help autodoc-hit``)."""
        fields = {
            "path": self.path, "title": self.title, "breadcrumb": self.breadcrumb, "kind": self.kind,
            "snippet": self.snippet, "byte_start": self.byte_start, "byte_end": self.byte_end,
            "line_start": self.line_start, "line_end": self.line_end, "relevance": self.relevance,
            "score": self.score, "via": [str(v) for v in self.via], "rank_score": self.rank_score,
            "generation": self.generation, "superseded": self.superseded, "superseded_by": self.superseded_by,
        }
        if self.chunk_id is not None:
            fields["chunk_id"] = self.chunk_id
        if self.workspace is not None:
            fields["workspace"] = self.workspace
        return fields

    def ranked(self, rank_score: float) -> Hit:
        """This hit after a cross-encoder scored it."""
        return dataclasses.replace(self, rank_score=round(rank_score, 6), via=(*self.via, "rank"))


def section_hit(row: HitRow, relevance: float, score: float, via: list[str]) -> Hit:
    return Hit(
        path=row.path, title=row.title, breadcrumb=row.breadcrumb, kind=row.kind,
        byte_start=row.byte_start, byte_end=row.byte_end, line_start=row.line_start, line_end=row.line_end,
        relevance=round(relevance, 4), score=round(score, 6), via=tuple(via), generation=row.generation,
        superseded=row.superseded, superseded_by=row.successor_path, doc_id=row.doc_id,
        successor_id=row.successor_id, chunk_id=row.chunk_id,
    )


def document_hits(conn: apsw.Connection, ws_id: int, document_clauses: list[Clause], limit: int) -> list[Hit]:
    """Whole documents passing the filters, in path order: the answer to a facet-only query."""
    return [
        Hit(path=path, title=title, breadcrumb=title, kind="document", byte_start=0, byte_end=size, line_start=1,
            line_end=line_count, relevance=1.0, score=1.0, via=("facet",), generation=generation,
            superseded=status == "superseded" or successor_id is not None, superseded_by=successor_path,
            doc_id=doc_id, successor_id=successor_id)
        for doc_id, path, title, generation, line_count, size, status, successor_id, successor_path
        in documents.listed(conn, ws_id, document_clauses, limit)
    ]


def cap_per_document(hits: list[Hit], cap: int = MAX_PER_DOCUMENT) -> list[Hit]:
    counts: dict[int, int] = {}
    kept = []
    for hit in hits:
        counts[hit.doc_id] = counts.get(hit.doc_id, 0) + 1
        if counts[hit.doc_id] <= cap:
            kept.append(hit)
    return kept


def demote_superseded(hits: list[Hit]) -> list[Hit]:
    """Move each hit of a superseded document that ranks above its successor's hits directly below them.
    A hit already below its successor stays where it is (moving it up would promote stale text), and as
    only hits above their successor move, a supersession cycle cannot hold every one of its hits back."""
    first = {}
    for position, hit in enumerate(hits):
        first.setdefault(hit.doc_id, position)
    pending = [h for i, h in enumerate(hits) if h.superseded and first.get(h.successor_id, -1) > i]
    result = [h for h in hits if h not in pending]
    while pending:
        placed = [h for h in pending if any(r.doc_id == h.successor_id for r in result)]
        if not placed:  # cannot happen (see above); never drop hits if it did
            return result + pending
        for hit in placed:
            index = max(i for i, r in enumerate(result) if r.doc_id == hit.successor_id)
            while index + 1 < len(result) and result[index + 1].successor_id == hit.successor_id \
                    and result[index + 1].superseded:
                index += 1
            result.insert(index + 1, hit)
            pending.remove(hit)
    return result


def in_relevance_order(shown: list[Hit]) -> list[Hit]:
    """The hits as listed, each shown with at most the relevance of the hit above it. The order also follows
    rules a section's own match does not see (its document's other sections, boosts, a retriever's leader kept
    on top, superseded documents below their successor, a cross-encoder), so a lower match can rank above a
    higher one; the number shown is then the one the order follows: the hit below it shows no more than it."""
    settled, ceiling = [], math.inf
    for hit in shown:
        if hit.relevance > ceiling:
            hit = dataclasses.replace(hit, relevance=ceiling)
        ceiling = hit.relevance
        settled.append(hit)
    return settled


def with_snippets(conn: apsw.Connection, hits: list[Hit], words: list[str]) -> list[Hit]:
    """The hits, each given its snippet (in place: they are this search's own)."""
    texts = bodies(conn, [h.chunk_id for h in hits if h.chunk_id is not None])
    for hit in hits:
        hit.snippet = snippet(texts.get(hit.chunk_id) or hit.breadcrumb or "", words)
    return hits


def first_word_at(body: str, stems: list[str]) -> int:
    """Where the first of these stems begins in the body, case-blind; -1 if none is there. In ASCII text
    case-blind is lower-case equality: no pattern to compile (a related search's words are new each time, and
    compiling them was most of its snippets' cost)."""
    if not stems:
        return -1
    if body.isascii() and all(stem.isascii() for stem in stems):
        lowered = body.lower()
        return min((at for stem in stems if (at := lowered.find(stem.lower())) != -1), default=-1)
    found = re.search("|".join(re.escape(stem) for stem in stems), body, re.IGNORECASE)
    return found.start() if found else -1


def snippet(body: str, words: list[str], size: int = SNIPPET_CHARS) -> str:
    """About ``size`` characters of the body around the first query word, whitespace folded, cut at
    word ends. The word is found case-blind in the body itself: ``body.lower()`` can be longer than the
    body (İ lowers to two characters), which shifted the window away from the word."""
    position = first_word_at(body, [word[: max(4, len(word) - 2)] for word in words if word])
    start = 0 if position <= size // 3 else position - size // 3
    if start:
        space = body.find(" ", start, position)
        start = space + 1 if space != -1 else start
    window = " ".join(body[start : start + size * 2].split())  # the same text as re.sub(r"\s+"), far cheaper
    text = window[:size].rstrip()
    if len(window) > size and window[size] != " " and (space := text.rfind(" ")) > size // 2:
        text = text[:space]  # not half a word
    prefix = "…" if start else ""
    suffix = "…" if len(window) > size or start + size * 2 < len(body) else ""
    return prefix + text + suffix
