"""Fusion's ordering rules, on plain candidate lists with hand-worked scores."""

from __future__ import annotations

from pytest import approx

from autodoc_core.rank.fuse import (
    Fused,
    auto_weight,
    cosine_shares,
    holders_first,
    keep_leaders,
    lexical_shares,
    linear,
)
from autodoc_core.rank.hits import Hit, demote_superseded
from autodoc_core.search.stages import Candidates


def found(rankings: dict[str, list[int]], bm25: dict[int, float] | None = None,
          cosines: dict[int, float] | None = None) -> dict[str, Candidates]:
    """Each retriever's candidates: the lexical ones scored by ``bm25``, the semantic ones by ``cosines``."""
    scores = {"lexical": bm25 or {}, "semantic": cosines or {}}
    return {name: Candidates(ids, scores.get(name, {})) for name, ids in rankings.items()}


def ids(fused: list[Fused]) -> list[int]:
    return [entry.chunk_id for entry in fused]


def scores(fused: list[Fused]) -> dict[int, float]:
    return {entry.chunk_id: entry.score for entry in fused}


def test_a_semantic_only_leader_is_not_buried() -> None:
    # Chunk 9 is the semantic leader but (no query word) last in the fused order.
    fused = [Fused(1, 0.9, 0.9), Fused(2, 0.8, 0.8), Fused(3, 0.7, 0.7), Fused(4, 0.6, 0.6), Fused(9, 0.1, 0.1)]
    rankings = {"lexical": [1, 2, 3, 4], "semantic": [9, 1, 2]}
    assert ids(keep_leaders(fused, found(rankings), None)) == [1, 9, 2, 3, 4]


def test_leaders_already_on_top_change_nothing_and_one_retriever_is_left_alone() -> None:
    fused = [Fused(i, 1.0 / i, 0.5) for i in (1, 2, 3, 4)]
    assert ids(keep_leaders(fused, found({"lexical": [1, 3], "semantic": [2, 4]}), None)) == [1, 2, 3, 4]
    assert ids(keep_leaders(fused, found({"lexical": [4, 1]}), None)) == [1, 2, 3, 4]  # tag boosts may outrank it


def test_three_retrievers_fill_the_first_three_places() -> None:
    fused = [Fused(i, 1.0 / i, 0.5) for i in range(1, 8)]
    rankings = {"lexical": [2, 1], "symbol": [6], "semantic": [7, 1]}
    assert ids(keep_leaders(fused, found(rankings), None)) == [2, 6, 7, 1, 3, 4, 5]


# Lexical leader 5, semantic leader 7; fused order 1, 2, 3, 7, 5; cosines from 0.45 (chunk 2) to 0.6 (chunk 7).
LEADER_FUSED = [Fused(1, 0.9, 0.9), Fused(2, 0.8, 0.8), Fused(3, 0.7, 0.7), Fused(7, 0.6, 0.6), Fused(5, 0.5, 0.5)]
LEADER_RANKINGS = {"lexical": [5, 1, 2], "semantic": [7, 1, 3]}
LEADER_COSINES = {1: 0.5, 2: 0.45, 3: 0.48, 7: 0.6}


def leaders_order(lexical_leader_cosine: float | None, rankings: dict[str, list[int]] = LEADER_RANKINGS,
                  agreement: float | None = 0.4, cosines: dict[int, float] | None = LEADER_COSINES) -> list[int]:
    known = dict(cosines or {})
    if lexical_leader_cosine is not None:
        known[5] = lexical_leader_cosine
    return ids(keep_leaders(LEADER_FUSED, found(rankings), known if cosines is not None else None, agreement))


def test_a_lexical_leader_the_embedding_disagrees_with_is_not_kept_on_top() -> None:
    # share (0.46 - 0.45) / 0.15 = 0.07: the semantic leader alone takes the first place.
    assert leaders_order(0.46) == [7, 1, 2, 3, 5]


def test_a_lexical_leader_the_embedding_agrees_with_is_kept() -> None:
    assert leaders_order(0.55) == [7, 5, 1, 2, 3]  # share 0.67
    assert leaders_order(0.51) == [7, 5, 1, 2, 3]  # share exactly 0.4: kept


def test_the_check_is_off_for_identifier_queries_rrf_missing_cosines_and_no_threshold() -> None:
    assert leaders_order(0.46, {**LEADER_RANKINGS, "symbol": []}) == [7, 5, 1, 2, 3]  # found nothing, still ran
    assert leaders_order(0.46, cosines=None) == [7, 5, 1, 2, 3]  # RRF: no blend cosines
    assert leaders_order(None) == [7, 5, 1, 2, 3]  # no vector yet
    assert leaders_order(0.46, agreement=None) == [7, 5, 1, 2, 3]


def test_the_check_is_off_for_a_one_word_query() -> None:
    # One word (a build tag, say) has no common words to share with a template section by accident.
    assert ids(keep_leaders(LEADER_FUSED, found(LEADER_RANKINGS), {**LEADER_COSINES, 5: 0.46}, 0.4, one_word=True)) \
        == [7, 5, 1, 2, 3]


def test_a_pasted_identifier_the_symbol_retriever_matched_pins_no_semantic_leader() -> None:
    # Lexical and symbol agree on chunk 1; the embedding's best guess, chunk 9, lacks the name.
    fused = [Fused(1, 3.0, 0.9), Fused(2, 2.5, 0.8), Fused(3, 2.0, 0.7), Fused(9, 0.5, 0.5)]
    rankings = {"lexical": [1, 2, 3], "symbol": [1, 2], "semantic": [9, 1]}
    assert ids(keep_leaders(fused, found(rankings), None, pasted=True)) == [1, 2, 3, 9]
    assert ids(keep_leaders(fused, found(rankings), None)) == [1, 9, 2, 3]  # in a sentence it is kept
    nothing = {**rankings, "symbol": []}  # no page holds the name: the embedding's guess is all there is
    assert ids(keep_leaders(fused, found(nothing), None, pasted=True)) == [1, 9, 2, 3]


def test_the_chunks_holding_a_pasted_identifier_come_first_in_fused_order() -> None:
    # Chunk 5 leads on the identifier's pieces alone; 1 and 2 hold it.
    fused = [Fused(5, 3.0, 0.9), Fused(9, 2.0, 0.8), Fused(2, 1.5, 0.7), Fused(1, 1.0, 0.6)]
    assert ids(holders_first(fused, {1, 2})) == [2, 1, 5, 9]
    assert ids(holders_first(fused, set())) == [5, 9, 2, 1]  # no holder: the fused order stands
    assert ids(holders_first(fused, {7})) == [5, 9, 2, 1]  # a holder that is not a candidate changes nothing


def test_equal_cosines_cannot_disagree() -> None:
    flat = {c: 0.5 for c in (1, 2, 3, 7)}
    assert leaders_order(0.5, cosines=flat) == [7, 5, 1, 2, 3]


def test_a_leader_the_fused_list_lacks_is_no_leader() -> None:
    assert leaders_order(0.55, {"lexical": [8, 5], "semantic": [7, 1]}) == [7, 1, 2, 3, 5]


def test_a_document_both_retrievers_found_by_different_sections_comes_first() -> None:
    # Document A: lexical finds its section 1, semantic its section 2. B is lexical's best chunk,
    # C semantic's best; neither retriever returns the other's document.
    doc_of = {1: 100, 2: 100, 3: 200, 4: 300}
    rankings = {"lexical": [3, 1], "semantic": [4, 2]}
    bm25 = {3: 10.0, 1: 8.0}
    cosines = {1: 0.30, 2: 0.50, 3: 0.30, 4: 0.55}  # lexical hits get their exact cosine
    # Shares: lexical 3 -> 1.0, 1 -> 0.8; cosines over 0.30..0.55: 1, 3 -> 0, 2 -> 0.8, 4 -> 1.0.
    # Chunk blends (w = 0.4): 1: 0.32, 2: 0.48, 3: 0.40, 4: 0.60.
    # Document blends (best chunk per side): A 0.4*0.8 + 0.6*0.8 = 0.80, B 0.40, C 0.60.
    fused = linear(found(rankings, bm25, cosines), doc_of, 0.4, document_weight=1.0)
    assert ids(fused) == [2, 4, 1, 3]
    assert scores(fused) == approx({2: 1.28, 4: 1.20, 1: 1.12, 3: 0.80})
    assert {e.chunk_id: e.relevance for e in fused} == approx({1: 0.32, 2: 0.48, 3: 0.40, 4: 0.60})
    # Without the document's share, A's sections fall behind the single-retriever documents.
    assert ids(linear(found(rankings, bm25, cosines), doc_of, 0.4, document_weight=0.0)) == [4, 2, 3, 1]


def test_an_identifier_query_trusts_the_chunk_with_every_word() -> None:
    # The symbol retriever ran (and found nothing): lexical's AND match (chunk 1, low BM25) leads.
    doc_of = {1: 10, 2: 20, 3: 30}
    bm25 = {1: 2.0, 2: 20.0}
    cosines = {1: 0.2, 2: 0.5, 3: 0.6}
    # Lexical shares: AND part [1] -> 1.0, OR part [2] -> 0.5; cosines over 0.2..0.6: 0, 0.75, 1.0.
    # w = 0.7: chunk 1: 0.7 + document 0.7 = 1.4; chunk 2: 0.35 + 0.225 = 0.575, twice = 1.15; chunk 3: 0.6.
    fused = linear(found({"lexical": [1, 2], "symbol": [], "semantic": [3, 2]}, bm25, cosines), doc_of, 0.4,
                   identifier_weight=0.7, document_weight=1.0)
    assert ids(fused) == [1, 2, 3]
    assert scores(fused) == approx({1: 1.4, 2: 1.15, 3: 0.6})
    # The same lists without the symbol retriever blend at w = 0.4: 0.8, 1.3, 1.2.
    plain = linear(found({"lexical": [1, 2], "semantic": [3, 2]}, bm25, cosines), doc_of, 0.4, document_weight=1.0)
    assert scores(plain) == approx({1: 0.8, 2: 1.3, 3: 1.2})


def test_a_symbol_match_adds_its_reciprocal_rank() -> None:
    doc_of = {1: 10, 5: 50, 6: 60}
    fused = linear(found({"lexical": [1], "symbol": [5, 6], "semantic": [1]}, {1: 3.0}, {1: 0.4}), doc_of, 0.4,
                   identifier_weight=0.7, document_weight=1.0)
    # Chunk 1 is first on both sides (shares 1.0; one cosine scales to 0): 0.7 + 0.7 = 1.4.
    # Symbol matches: 61 / 61 = 1.0 and 61 / 62.
    assert scores(fused) == approx({1: 1.4, 5: 1.0, 6: 61 / 62})


def test_lexical_shares_split_the_and_from_the_or() -> None:
    assert lexical_shares([5, 6, 7], {5: 2.0, 6: 9.0, 7: 4.5}) == approx({5: 1.0, 6: 0.5, 7: 0.25})
    assert lexical_shares([6, 7], {6: 9.0, 7: 4.5}) == approx({6: 1.0, 7: 0.5})
    assert lexical_shares([], {}) == {}


def test_cosine_shares_span_the_candidates() -> None:
    assert cosine_shares({1: 0.30, 2: 0.50, 3: 0.40}) == approx({1: 0.0, 2: 1.0, 3: 0.5})
    assert cosine_shares({1: 0.42, 2: 0.42}) == {1: 0.0, 2: 0.0}
    assert cosine_shares({}) == {}


def test_a_chunk_without_a_vector_yet_is_judged_by_its_words() -> None:
    """While vectors fill, the one chunk with every query word (1, no vector yet) must not lose to a
    chunk that has a vector but no query word (2), however min-max stretches the few cosines there are.
    Worked by hand (w = 0.4): chunk 1 blends on its lexical share alone, 1.0, and so does its document:
    score 2.0. Chunk 2: cosine share 1.0 (the best of 0.10 and -0.05), blend 0.6, document 0.6: 1.2.
    Chunk 3: cosine share 0, lexical 0: 0."""
    doc_of = {1: 10, 2: 20, 3: 30}
    rankings = {"lexical": [1], "semantic": [2, 3]}
    fused = linear(found(rankings, {1: 5.0}, {2: 0.10, 3: -0.05}), doc_of, 0.4)
    assert ids(fused) == [1, 2, 3]
    assert scores(fused) == approx({1: 2.0, 2: 1.2, 3: 0.0})
    assert {e.chunk_id: e.relevance for e in fused} == approx({1: 1.0, 2: 0.6, 3: 0.0})


def test_auto_weight_falls_by_a_tenth_per_tenfold_sections_to_a_floor() -> None:
    assert auto_weight(0) == auto_weight(1) == approx(0.4)  # one section per document (or nothing indexed)
    assert auto_weight(10) == approx(0.3)
    assert auto_weight(55) == approx(0.4 - 0.1 * 1.7404, abs=1e-4)
    assert auto_weight(100) == auto_weight(10_000) == approx(0.2)


def ranked_hits(*docs: tuple[int, int | None]) -> list[Hit]:
    """Hits in rank order, each (doc_id, successor's doc_id or None)."""
    return [Hit(path=f"d{doc}.md", title=None, breadcrumb=None, kind="section", byte_start=0, byte_end=1,
                line_start=1, line_end=1, relevance=1.0, score=1.0, via=("lexical",), generation=1,
                superseded=successor is not None, superseded_by=None, doc_id=doc, successor_id=successor)
            for doc, successor in docs]


def test_a_superseded_hit_moves_down_below_its_successor_and_never_up() -> None:
    order = lambda hits: [h.doc_id for h in demote_superseded(hits)]  # noqa: E731
    assert order(ranked_hits((1, 2), (2, None), (3, None))) == [2, 1, 3]  # above its successor: moved down
    # Below it already (40th against 2nd): it stays, where it used to be pulled up to 3rd.
    assert order(ranked_hits((1, None), (2, None), (3, None), (4, None), (5, 2))) == [1, 2, 3, 4, 5]
    # Cycles (A <-> B, A -> B -> C -> A) keep every hit; they used to go to the end, past the limit.
    assert order(ranked_hits((1, 2), (2, 1), (3, None))) == [2, 1, 3]
    assert order(ranked_hits((1, 2), (2, 3), (3, 1), (4, None))) == [3, 2, 1, 4]
