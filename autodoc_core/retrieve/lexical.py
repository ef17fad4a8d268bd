"""The lexical retriever: FTS5 BM25 over a workspace's chunks, with field weights.

Words are ANDed first; when that finds fewer than ``AND_ENOUGH`` chunks, an OR of the same words
ranks partial matches below the full ones, so long natural-language questions still answer.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import apsw

from autodoc_core.parse.cjk import query_text
from autodoc_core.retrieve.query import ParsedQuery, Term
from autodoc_core.store import chunks
from autodoc_core.store.filters import Filters

CANDIDATES = 50
AND_ENOUGH = 10
# Longer queries skip the AND attempt: on SciFact train an AND of more than four words never found
# AND_ENOUGH chunks, and the ranked OR puts chunks that match every word first anyway.
MAX_AND_TERMS = 4
# In the OR fallback, words found in more than this share of a workspace's chunks are left out
# when at least MIN_KEPT_TERMS others remain: they add little to BM25 (low IDF) but make FTS5
# score most of the table. Measured on SciFact train: 0.3 keeps nDCG@10 within
# noise; see doc/benchmarks/kb-retrieval.md for the latency it saves.
COMMON_TERM_SHARE = 0.3
MIN_KEPT_TERMS = 2
# FTS5 scores every row an OR matches, so its cost grows with the postings of the query's words.
# The OR keeps the rarest words (highest IDF) until their postings reach this budget; on SciFact
# train 4,000 keeps nDCG@10 unchanged (0.7026 -> 0.7024) and bounds the cost on large workspaces.
POSTINGS_BUDGET = 4_000
DF_CACHE_SECONDS = 60.0
# Two columns: "head" (title, breadcrumb, aliases, tags) and "body". Measured on SciFact train:
# five separately weighted columns cost 30% more per query than two, for no gain in nDCG@10.
HEAD_WEIGHT = 3.0
BODY_WEIGHT = 1.0


@dataclass
class LexicalResult:
    chunk_ids: list[int]
    scores: dict[int, float]
    strategy: str
    common_terms_left_out: list[str] = field(default_factory=list)


class DocumentFrequencies:
    """How many of a workspace's chunks contain a word, from the FTS5 vocabulary (one B-tree lookup
    per word, stemmed by the index's own tokenizer). Counts are cached for a minute: a slightly stale
    count only shifts which words are pruned."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, str], tuple[float, int]] = {}
        # A word's stem, whatever the workspace (one tokenizer for all): a search of several workspaces asked it
        # of every one, three times each (pruning, what the words could score, how common they are).
        self._stems: dict[str, str | None] = {}

    def total(self, conn: apsw.Connection, ws_id: int) -> int:
        now = time.monotonic()
        cached = self._cached(ws_id, "", now)
        return cached if cached is not None else self._store(ws_id, "", now, chunks.count(conn, ws_id))

    def count(self, conn: apsw.Connection, ws_id: int, term: Term) -> int:
        """Chunks containing the word; 0 (never pruned) for phrases and prefixes."""
        text, lone_cjk = query_text(term.text)
        if term.phrase or term.prefix or lone_cjk:
            return 0
        stem = self._one_stem(conn, text)
        return 0 if stem is None else self.stem_count(conn, ws_id, stem)

    def matching(self, conn: apsw.Connection, ws_id: int, term: Term) -> int:
        """Chunks a term matches as the word search matches it, phrases and prefixes too (``count`` reads the
        vocabulary, which knows single stems only); counted up to half the chunks: a term in more has no weight
        in BM25 (its IDF is clamped)."""
        text, lone_cjk = query_text(term.text)
        stem = None if term.phrase or term.prefix or lone_cjk else self._one_stem(conn, text)
        if stem is not None:
            return self.stem_count(conn, ws_id, stem)
        now = time.monotonic()
        most = self.total(conn, ws_id) // 2 + 1
        key = f"\x01{most}\x01{term.fts()}"
        found = self._cached(ws_id, key, now)
        if found is None:
            found = self._store(ws_id, key, now, chunks.matching_up_to(conn, ws_id, term.fts(), most))
        return found

    def _one_stem(self, conn: apsw.Connection, text: str) -> str | None:
        known = self._stems.get(text, "")  # no stem is "" (threads share it: get, not `in` then a read)
        if known != "":
            return known
        stems = conn.fts5_tokenizer("porter", ["unicode61"])(
            text.encode(), apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False
        )
        if len(self._stems) > 100_000:
            self._stems.clear()
        stem = self._stems[text] = stems[0][0] if len(stems) == 1 else None
        return stem

    def stem_count(self, conn: apsw.Connection, ws_id: int, stem: str) -> int:
        """Chunks containing a stem as the index's tokenizer wrote it."""
        now = time.monotonic()
        count = self._cached(ws_id, stem, now)
        if count is None:
            count = self._store(ws_id, stem, now, chunks.stem_count(conn, ws_id, stem))
        return count

    def stem_counts(self, conn: apsw.Connection, ws_id: int, stems: list[str]) -> dict[str, int]:
        """``stem_count`` for many stems, those not cached read in one query (a document has thousands)."""
        now = time.monotonic()
        counts = {stem: self._cached(ws_id, stem, now) for stem in stems}
        missing = [stem for stem, count in counts.items() if count is None]
        for start in range(0, len(missing), 500):
            part = missing[start : start + 500]
            found = chunks.stem_counts(conn, ws_id, part)
            for stem in part:
                counts[stem] = self._store(ws_id, stem, now, found.get(stem, 0))
        return {stem: count or 0 for stem, count in counts.items()}

    def counts_up_to(self, conn: apsw.Connection, ws_id: int, written: dict[str, str],
                     most: int) -> tuple[dict[str, int], set[str]]:
        """``stem_count`` of each stem (``written``: stem -> a word of the text it came from), counted only up
        to ``most``, and the stems whose count is that lower bound: the vocabulary reads every posting of a
        stem to count them (7 ms for a common one at a million sections); a match stops at ``most``. A
        stem is matched through its written word when that word, alone, is that stem and nothing more."""
        now = time.monotonic()
        tokenize = conn.fts5_tokenizer("porter", ["unicode61"])
        counts: dict[str, int] = {}
        at_least: set[str] = set()
        for stem, word in written.items():
            key = f"\x00{most}\x00{stem}"  # a bounded count, kept apart from the exact ones
            count = self._cached(ws_id, stem, now)
            bounded = None if count is not None else self._cached(ws_id, key, now)
            if count is None and bounded is None:
                if tokenize(word.encode(), apsw.FTS5_TOKENIZE_QUERY, None, include_offsets=False) == [(stem,)]:
                    phrase = '"' + word.replace('"', '""') + '"'
                    bounded = self._store(ws_id, key, now, chunks.matching_up_to(conn, ws_id, phrase, most))
                else:
                    count = self.stem_count(conn, ws_id, stem)
            if bounded is not None and bounded >= most:
                at_least.add(stem)
            counts[stem] = count if count is not None else bounded
        return counts, at_least

    def _cached(self, ws_id: int, key: str, now: float) -> int | None:
        hit = self._cache.get((ws_id, key))
        return hit[1] if hit and now - hit[0] < DF_CACHE_SECONDS else None

    def _store(self, ws_id: int, key: str, now: float, count: int) -> int:
        if len(self._cache) > 200_000:
            self._cache.clear()
        self._cache[(ws_id, key)] = (now, count)
        return count


def prune_common(conn: apsw.Connection, ws_id: int, terms: list[Term],
                 frequencies: DocumentFrequencies) -> tuple[list[Term], list[Term]]:
    total = frequencies.total(conn, ws_id)
    counts = sorted(((frequencies.count(conn, ws_id, t), i, t) for i, t in enumerate(terms)), key=lambda c: c[:2])
    kept: list[Term] = []
    postings = 0
    for count, _position, term in counts:
        informative = count <= COMMON_TERM_SHARE * total and postings + count <= POSTINGS_BUDGET
        if informative or len(kept) < MIN_KEPT_TERMS:
            kept.append(term)
            postings += count
    if len(kept) == len(terms):
        return terms, []
    return [t for t in terms if t in kept], [t for t in terms if t not in kept]


def match_expression(terms: list[Term], operator: str) -> str:
    return f" {operator} ".join(term.fts() for term in terms)


def search(conn: apsw.Connection, ws_id: int, query: ParsedQuery, filters: Filters,
           frequencies: DocumentFrequencies, limit: int = CANDIDATES) -> LexicalResult:
    if not query.terms:
        return LexicalResult([], {}, "none")
    ids: list[int] = []
    scores: dict[int, float] = {}
    if len(query.terms) <= MAX_AND_TERMS and not query.any_word:
        conjunctive = match_expression(query.terms, "AND")
        ids, scores = _run(conn, ws_id, conjunctive, filters, limit)
        # One word stands alone; a long CJK run that is nowhere whole is likely several words (a clause).
        alone = len(query.terms) == 1 and not query.terms[0].compound and (ids or not query.terms[0].loosens_cjk)
        if len(ids) >= min(AND_ENOUGH, limit) or alone:
            return LexicalResult(ids, scores, "and")
    # The OR takes a typed identifier's pieces as separate words, as if it had not been joined.
    loose = list(dict.fromkeys(piece for term in query.terms for piece in term.loosened()))
    # A related section's words were chosen by their weight within a postings budget already.
    kept, left_out = (loose, []) if query.any_word else prune_common(conn, ws_id, loose, frequencies)
    disjunctive = match_expression(kept, "OR")
    more_ids, more_scores = _run(conn, ws_id, disjunctive, filters, limit)
    seen = set(ids)
    merged = ids + [i for i in more_ids if i not in seen]
    for chunk_id, score in more_scores.items():
        scores.setdefault(chunk_id, score)
    strategy = "and+or" if ids else "or"
    return LexicalResult(merged[:limit], scores, strategy, [t.text for t in left_out])


BM25_K1 = 1.2  # FTS5's bm25() constant: a word's score approaches its IDF times (k1 + 1) as it repeats


def attainable(conn: apsw.Connection, ws_id: int, terms: list[Term], frequencies: DocumentFrequencies) -> float | None:
    """The most BM25 any chunk of this workspace could score for these terms (every term, repeated): a chunk's
    BM25 over it is 0..1 and, unlike BM25 itself, comparable between workspaces (each has its own word
    statistics). A term no chunk holds counts at its full IDF: a workspace without it cannot match the query as
    well. Phrases (a pasted identifier is one), prefixes and CJK runs count as the word search matches them. None
    without a term."""
    total = frequencies.total(conn, ws_id)
    counted = [frequencies.matching(conn, ws_id, term) for term in terms]
    # A count cached since the workspace shrank can pass the total: such a word is everywhere.
    most = sum(max(math.log((max(total - n, 0) + 0.5) / (n + 0.5)), 1e-6) for n in counted) * (BM25_K1 + 1)
    return most if most > 0 else None


def prevalence(conn: apsw.Connection, ws_id: int, terms: list[Term], frequencies: DocumentFrequencies) -> float | None:
    """The mean share of this workspace's chunks that hold each of the query's words: how much the workspace is
    about them (in a workspace of NGINX guides "nginx" is everywhere, in one of Kubernetes design documents it is
    rare), a resource-selection cue of federated search that BM25 cannot give (its IDF scores a word its
    workspace is full of as worth little there). Each share counts half a section more, as BM25's IDF does: a
    workspace that holds none of the words still has a share (its hits found by meaning are not all zeroed by
    the factor made of it). None without a word to count (phrases and prefixes alone)."""
    total = frequencies.total(conn, ws_id)
    counted = [frequencies.count(conn, ws_id, term) for term in terms if not (term.phrase or term.prefix)]
    if not counted or not total:
        return None
    return sum(min((count + 0.5) / (total + 0.5), 1.0) for count in counted) / len(counted)


def match_share(scores: dict[int, float], most: float | None) -> float | None:
    """The best chunk's BM25 over ``attainable``'s figure; None when nothing matched or it has none."""
    if not scores or not most:
        return None
    return min(1.0, max(scores.values()) / most)


def _run(conn: apsw.Connection, ws_id: int, match: str, filters: Filters,
         limit: int) -> tuple[list[int], dict[int, float]]:
    try:
        rows = chunks.search(conn, ws_id, match, (HEAD_WEIGHT, BODY_WEIGHT), filters, limit)
    except apsw.SQLError:
        # Every term is quoted, so this should not happen; a query must never fail the search.
        return [], {}
    return [r[0] for r in rows], {r[0]: -r[1] for r in rows}
