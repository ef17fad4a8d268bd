"""Fusion's ordering rules, on plain candidate lists."""

from __future__ import annotations

from autodoc_core.rank.fuse import Fused, keep_leaders, linear


def ids(fused: list[Fused]) -> list[int]:
    return [entry.chunk_id for entry in fused]


def test_a_semantic_only_leader_is_not_buried_by_the_blend() -> None:
    rankings = {"lexical": [1, 2, 3, 4], "semantic": [9, 1, 2]}
    bm25 = {1: 10.0, 2: 9.0, 3: 8.0, 4: 7.0}
    cosines = {9: 0.80, 1: 0.55, 2: 0.50, 3: 0.45, 4: 0.44}
    blended = linear(rankings, bm25, cosines, 0.4)
    assert ids(blended)[-1] == 9  # no query word: the blend alone puts it last
    assert ids(keep_leaders(blended, rankings)) == [1, 9, 2, 3, 4]


def test_leaders_already_on_top_change_nothing_and_one_retriever_is_left_alone() -> None:
    fused = [Fused(i, 1.0 / i, 0.5) for i in (1, 2, 3, 4)]
    assert ids(keep_leaders(fused, {"lexical": [1, 3], "semantic": [2, 4]})) == [1, 2, 3, 4]
    assert ids(keep_leaders(fused, {"lexical": [4, 1]})) == [1, 2, 3, 4]  # tag boosts may outrank it


def test_three_retrievers_fill_the_first_three_places() -> None:
    fused = [Fused(i, 1.0 / i, 0.5) for i in range(1, 8)]
    rankings = {"lexical": [2, 1], "symbol": [6], "semantic": [7, 1]}
    assert ids(keep_leaders(fused, rankings)) == [2, 6, 7, 1, 3, 4, 5]


def test_a_near_tie_goes_to_the_chunk_both_retrievers_returned() -> None:
    # Chunk 5 (lexical only) blends a hair above chunk 6 (both lists); consensus wins the tie.
    rankings = {"lexical": [5, 6], "semantic": [6]}
    bm25 = {5: 10.0, 6: 7.2}
    cosines = {5: 0.19, 6: 0.37}
    blended = linear(rankings, bm25, cosines, 0.4)
    assert ids(blended) == [6, 5]
    # Worked by hand: 5 blends 0.6 * 0.19 + 0.4 * 10/10 = 0.514; 6 blends 0.6 * 0.37 + 0.4 * 7.2/10 = 0.510,
    # and scores 0.530 with the 0.02 bonus. The bonus orders; relevance stays the plain blend.
    assert {e.chunk_id: round(e.relevance, 9) for e in blended} == {5: 0.514, 6: 0.510}
    assert {e.chunk_id: round(e.score, 9) for e in blended} == {5: 0.514, 6: 0.530}
