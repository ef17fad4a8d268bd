"""Fusion: the linear blend (default) or Reciprocal Rank Fusion over whichever retrievers ran, then tag
and authority boosts, each retriever's leader kept among the first hits, and for a pasted identifier the
hits that hold it first.

``relevance`` is 0..1: the blend's chunk share, or for RRF the fused score over the best possible one
(rank 1 in every active retriever), so 1.0 means "first everywhere".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from autodoc_core.search.stages import Candidates, Stage, scores_of

RRF_K = 60
TAG_BOOST = 1.2
AUTHORITY_BOOST = 0.1
# The linear blend's document agreement and identifier weights, chosen on the tuning sets with
# tests/bench/fusion.py (doc/benchmarks/fusion.md).
DOCUMENT_WEIGHT = 1.0
IDENTIFIER_WEIGHT = 0.6
# keep_leaders: the lexical leader's least cosine share (chosen on the tuning sets, doc/benchmarks/fusion.md).
LEADER_AGREEMENT = 0.4
# fusion_weight "auto": the lexical weight falls from 0.4 for one-section documents by 0.1 per tenfold more
# sections per document, to at least 0.2. Fitted on the pooled tuning sets of three corpora (SciFact, 1 section
# per document: Recall@3 best at 0.4; techdocs, 5: flat; KEPs, 55: best at 0.1-0.2) and confirmed by held-out
# queries on them. Shape explains part of it: cut into two-section files, the KEPs' preference for 0.2 goes flat
# when whole KEPs are scored, and stays when the parts are (doc/experiments/reshaped-keps/).
AUTO_WEIGHT_MAX = 0.4
AUTO_WEIGHT_MIN = 0.2
AUTO_WEIGHT_PER_DECADE = 0.1


@dataclass
class Fused:
    chunk_id: int
    score: float
    relevance: float
    via: list[str] = field(default_factory=list)


def rrf(found: Mapping[str, Candidates], k: int = RRF_K) -> list[Fused]:
    fused: dict[int, Fused] = {}
    for retriever, candidates in found.items():
        for rank, chunk_id in enumerate(candidates.chunk_ids, start=1):
            entry = fused.setdefault(chunk_id, Fused(chunk_id, 0.0, 0.0))
            entry.score += 1.0 / (k + rank)
            entry.via.append(retriever)
    best = len(found) / (k + 1) if found else 1.0
    for entry in fused.values():
        entry.relevance = min(1.0, entry.score / best)
    return sorted(fused.values(), key=lambda e: -e.score)


def auto_weight(sections_per_document: float) -> float:
    """The lexical weight for a corpus whose middle document has this many sections: the more sections a
    document has, the less its words single out the one that answers (each query word finds some section of
    every long document), while the embedding still tells the sections apart."""
    decades = math.log10(max(sections_per_document, 1.0))
    return max(AUTO_WEIGHT_MIN, AUTO_WEIGHT_MAX - AUTO_WEIGHT_PER_DECADE * decades)


def blend_weight(found: Mapping[str, Candidates], weight: float,
                 identifier_weight: float = IDENTIFIER_WEIGHT) -> float:
    """The lexical weight a blend uses: ``identifier_weight`` when the symbol retriever ran (the query is
    identifier-shaped), else ``weight``."""
    return identifier_weight if Stage.SYMBOL in found else weight


def linear(found: Mapping[str, Candidates], doc_of: dict[int, int], weight: float,
           identifier_weight: float = IDENTIFIER_WEIGHT, document_weight: float = DOCUMENT_WEIGHT) -> list[Fused]:
    """Each chunk's blend ``w * lexical + (1 - w) * semantic`` of the two retrievers' shares (0..1, see
    ``lexical_shares`` and ``cosine_shares``; a side that did not return the chunk gives 0 there, a lexical
    hit's cosine is known), plus ``document_weight`` times its document's blend, where each side of the
    document is its best chunk on that side: lexical finding one section and semantic another still agree
    about the document. ``identifier_weight`` replaces ``w`` when the symbol retriever ran, and a symbol
    match adds ``(k + 1) / (k + rank)``. The chunk's own blend is its relevance. BM25 and the cosines are the
    lexical and semantic candidates' scores."""
    weight = blend_weight(found, weight, identifier_weight)
    fused: dict[int, Fused] = {}
    for retriever, candidates in found.items():
        for chunk_id in candidates.chunk_ids:
            fused.setdefault(chunk_id, Fused(chunk_id, 0.0, 0.0)).via.append(retriever)
    cosines = scores_of(found, Stage.SEMANTIC)
    lexical = lexical_shares(_ids(found, Stage.LEXICAL), scores_of(found, Stage.LEXICAL))
    semantic = cosine_shares({c: cosines[c] for c in fused if c in cosines})
    documents = _document_blends(fused, doc_of, lexical, semantic, set(_ids(found, Stage.SEMANTIC)), weight,
                                 set(cosines))
    symbol_rank = {chunk_id: rank for rank, chunk_id in enumerate(_ids(found, Stage.SYMBOL), start=1)}
    for chunk_id, entry in fused.items():
        if chunk_id in cosines:
            blend = weight * lexical.get(chunk_id, 0.0) + (1 - weight) * semantic.get(chunk_id, 0.0)
        else:  # no vector yet (a fill in progress): its words are all there is to go on
            blend = lexical.get(chunk_id, 0.0)
        entry.relevance = min(1.0, blend)
        entry.score = blend + document_weight * documents[doc_of.get(chunk_id, -chunk_id)]
        if chunk_id in symbol_rank:
            entry.score += (RRF_K + 1) / (RRF_K + symbol_rank[chunk_id])
    return sorted(fused.values(), key=lambda e: -e.score)


def _ids(found: Mapping[str, Candidates], stage: Stage) -> list[int]:
    return found[stage].chunk_ids if stage in found else []


def _document_blends(chunk_ids: Iterable[int], doc_of: dict[int, int], lexical: dict[int, float],
                     semantic: dict[int, float], found_semantically: set[int], weight: float,
                     with_vectors: set[int]) -> dict[int, float]:
    """Each document's blend of its best lexical share and its best share among the chunks the semantic
    retriever returned (a chunk without a document stands for itself). A document none of whose
    candidates has a vector yet is judged by its words alone, as its chunks are."""
    best_lexical: dict[int, float] = {}
    best_semantic: dict[int, float] = {}
    embedded: set[int] = set()
    for chunk_id in chunk_ids:
        document = doc_of.get(chunk_id, -chunk_id)
        best_lexical[document] = max(best_lexical.get(document, 0.0), lexical.get(chunk_id, 0.0))
        if chunk_id in found_semantically:
            best_semantic[document] = max(best_semantic.get(document, 0.0), semantic.get(chunk_id, 0.0))
        if chunk_id in with_vectors:
            embedded.add(document)
    return {d: weight * best + (1 - weight) * best_semantic.get(d, 0.0) if d in embedded else best
            for d, best in best_lexical.items()}


def lexical_shares(ranking: list[int], bm25: Mapping[int, float]) -> dict[int, float]:
    """BM25 on 0..1 in the lexical list's order. The list holds the chunks matching every query word
    (the AND), then those matching some (the OR), each best first, so BM25 rises where the OR starts: the
    AND's chunks then take 0.5..1 and the OR's 0..0.5, each as BM25 over its part's best. Otherwise
    BM25 over the best."""
    ranking = [c for c in ranking if c in bm25]
    start = next((i for i in range(1, len(ranking)) if bm25[ranking[i]] > bm25[ranking[i - 1]]), len(ranking))
    if start == len(ranking):
        return _over_best(ranking, bm25, 0.0, 1.0)
    return {**_over_best(ranking[:start], bm25, 0.5, 0.5), **_over_best(ranking[start:], bm25, 0.0, 0.5)}


def _over_best(chunk_ids: list[int], bm25: Mapping[int, float], base: float, span: float) -> dict[int, float]:
    best = max((bm25[c] for c in chunk_ids), default=0.0) or 1.0
    return {c: base + span * max(bm25[c], 0.0) / best for c in chunk_ids}


def cosine_shares(cosines: dict[int, float]) -> dict[int, float]:
    """Cosines min-max scaled over the query's candidates: MiniLM's cosines for one query sit in a narrow
    band, so raw they would separate candidates far less than BM25's share does."""
    if not cosines:
        return {}
    low, high = min(cosines.values()), max(cosines.values())
    span = (high - low) or 1.0
    return {c: (value - low) / span for c, value in cosines.items()}


def authority(inbound_links: int, most_inbound: int) -> float:
    """1.0 for an unlinked document up to 1.1 for the workspace's most linked one."""
    if inbound_links <= 0 or most_inbound <= 0:
        return 1.0
    return 1.0 + AUTHORITY_BOOST * math.log1p(inbound_links) / math.log1p(most_inbound)


def apply_boosts(fused: list[Fused], doc_tags: dict[int, Sequence[str]], inbound: dict[int, int],
                 most_inbound: int, query_words: set[str]) -> list[Fused]:
    """``doc_tags`` and ``inbound`` are keyed by chunk id; returns the list re-sorted."""
    for entry in fused:
        if query_words and query_words.intersection(doc_tags.get(entry.chunk_id, ())):
            entry.score *= TAG_BOOST
        entry.score *= authority(inbound.get(entry.chunk_id, 0), most_inbound)
    return sorted(fused, key=lambda e: -e.score)


def keep_leaders(fused: list[Fused], found: Mapping[str, Candidates], cosines: Mapping[int, float] | None,
                 agreement: float | None = LEADER_AGREEMENT, *, one_word: bool = False,
                 pasted: bool = False, sentence: bool = False) -> list[Fused]:
    """When several retrievers found chunks, each one's best chunk is among the first N hits (N = the number
    of distinct such chunks); the rest keep the fused order. A confident semantic match that no query word
    reaches (or an exact identifier the embedding misses) is not buried by the other list.

    The lexical leader is kept only where the embedding does not disagree (``embedding_agrees``), unless the
    query is identifier-shaped (``found`` has the symbol retriever, even with nothing found) or is one word
    as typed (``one_word``: a word the embedding may never have seen, such as a build tag). In long documents
    the best BM25 chunk for a question is often a section sharing its common words; then the semantic leader
    alone takes the first place. One word has no common words to share by accident ("what are the risks?"
    has, even though BM25 keeps "risks" alone). ``cosines`` are the blend's (None under RRF: no check).

    For an identifier pasted alone (``pasted``) that the symbol retriever matched, the semantic leader is not
    kept on top: the embedding blurs names, and its best guess (a release note sharing the name's words) would
    push a second page that holds the name out of the first places. With words around the identifier
    (``sentence``) the symbol leader is kept only when another retriever found it too: a chunk only the symbol
    retriever found matches none of the sentence's words the others ranked (see ``symbol_only_last``)."""
    rankings = {name: candidates.chunk_ids for name, candidates in found.items()}
    if sum(1 for ids in rankings.values() if ids) < 2:
        return fused
    present = {entry.chunk_id for entry in fused}
    checked = Stage.SYMBOL not in rankings and cosines is not None and not one_word
    leaders = {ids[0] for name, ids in rankings.items() if ids and ids[0] in present
               and not (name == Stage.SYMBOL and sentence and _found_by_symbol_alone(ids[0], rankings))
               and not (name == Stage.LEXICAL and checked and not embedding_agrees(ids[0], fused, cosines, agreement))
               and not (name == Stage.SEMANTIC and pasted and rankings.get(Stage.SYMBOL))}
    head: list[Fused] = []
    tail: list[Fused] = []
    pending = set(leaders)
    for entry in fused:
        if entry.chunk_id in pending:
            head.append(entry)
            pending.discard(entry.chunk_id)
        elif len(leaders) - len(head) > len(pending):
            head.append(entry)
        else:
            tail.append(entry)
    return head + tail


def _found_by_symbol_alone(chunk_id: int, rankings: Mapping[str, list[int]]) -> bool:
    return not any(chunk_id in ids for name, ids in rankings.items() if name != Stage.SYMBOL)


def symbol_only_last(fused: list[Fused]) -> list[Fused]:
    """The chunks only the symbol retriever found below the rest, each part in its order: for a query with
    words around its identifier ("restrict what a crates.io API token is allowed to publish"), those chunks
    hold the identifier but none of the words, and every section that matches the sentence comes first."""
    return sorted(fused, key=lambda entry: entry.via == [Stage.SYMBOL])  # stable: each part keeps its order


def holders_first(fused: list[Fused], holding: set[int]) -> list[Fused]:
    """The chunks that hold a pasted identifier before the rest, each part in its fused order: whoever pastes
    ``$oidc_logout_redirect`` or ``/etc/nginx/conf.d/dashboard.conf`` wants the pages that carry it, and a
    lexical or semantic leader that only shares its pieces (``client`` and ``id`` for ``--client_id``) is a
    guess. No holder among the candidates: the fused order stands."""
    return sorted(fused, key=lambda entry: entry.chunk_id not in holding)  # stable: each part keeps its order


def embedding_agrees(chunk_id: int, fused: list[Fused], cosines: Mapping[int, float],
                     agreement: float | None) -> bool:
    """Whether the chunk's cosine, min-max scaled over the candidates' (as ``cosine_shares``), is at least
    ``agreement``. A chunk without a cosine (no vector yet), no threshold (None) or candidates whose cosines
    are all equal cannot disagree."""
    if agreement is None or chunk_id not in cosines:
        return True
    known = [cosines[entry.chunk_id] for entry in fused if entry.chunk_id in cosines]
    low, high = min(known), max(known)
    return high == low or (cosines[chunk_id] - low) / (high - low) >= agreement
