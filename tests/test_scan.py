"""The Hamming prefilter against plain numpy: distances, histogram and shortlist, in one thread and several."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from autodoc_core.retrieve.semantic import SCAN_BLOCK, VectorIndex, hamming_distances, sign_bits, to_words


def reference_distances(bits: np.ndarray, query_bits: np.ndarray) -> np.ndarray:
    return np.unpackbits(bits ^ query_bits, axis=1).sum(axis=1)


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("dims", [384, 100])
def test_distances_and_histogram_match_plain_numpy(workers: int, dims: int) -> None:
    rng = np.random.default_rng(dims + workers)
    count = 2 * SCAN_BLOCK + 1234  # several blocks and a short last one
    vectors = rng.standard_normal((count, dims)).astype(np.float32)
    query = rng.standard_normal(dims).astype(np.float32)
    bits, query_bits = sign_bits(vectors), sign_bits(query[None, :])
    distance, histogram = hamming_distances(np.ascontiguousarray(to_words(bits).T), to_words(query_bits)[0], workers)
    expected = reference_distances(bits, query_bits)
    assert np.array_equal(distance, expected)
    assert np.array_equal(histogram[: dims + 1], np.bincount(expected, minlength=dims + 1))
    assert histogram.sum() == count


def test_shortlist_holds_the_nearest_codes_and_rescoring_finds_the_best() -> None:
    rng = np.random.default_rng(3)
    count, dims = SCAN_BLOCK + 5000, 384
    vectors = rng.standard_normal((count, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = VectorIndex(0, "synthetic")
    index.vectors, index.codes = vectors, np.ascontiguousarray(to_words(sign_bits(vectors)).T)
    index.chunk_ids = index.doc_ids = np.arange(count, dtype=np.int64)
    index.eligible = np.ones(count, dtype=bool)
    target = 777
    query = vectors[target] + 0.05 * rng.standard_normal(dims).astype(np.float32)
    query /= np.linalg.norm(query)
    positions = index._prefilter(query, None, 400)
    distances = reference_distances(sign_bits(vectors), sign_bits(query[None, :]))
    assert len(positions) >= 400
    outside = np.setdiff1d(np.arange(count), positions)
    assert distances[positions].max() <= distances[outside].min()
    recall = index.search(query, None, k=10)
    assert recall.chunk_ids[0] == target and recall.shortlist == len(positions)


def test_concurrent_scans_share_the_helper_threads_and_agree_with_one_at_a_time() -> None:
    rng = np.random.default_rng(11)
    count, dims = 3 * SCAN_BLOCK, 64
    codes = np.ascontiguousarray(to_words(sign_bits(rng.standard_normal((count, dims)))).T)
    queries = [to_words(sign_bits(rng.standard_normal((1, dims))))[0] for _ in range(8)]
    alone = [hamming_distances(codes, q) for q in queries]
    with ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda q: hamming_distances(codes, q), queries))
    for (d1, h1), (d2, h2) in zip(alone, together, strict=True):
        assert np.array_equal(d1, d2) and np.array_equal(h1, h2)


def test_exact_cosines_find_the_asked_chunks_wherever_the_index_holds_them() -> None:
    rng = np.random.default_rng(5)
    count, dims = 5000, 32
    index = VectorIndex(0, "synthetic")
    index.vectors = rng.standard_normal((count, dims)).astype(np.float32)
    # Ids as a refresh leaves them: mostly ascending, then a block appended out of order.
    index.chunk_ids = np.concatenate([np.arange(10, 4010, dtype=np.int64), rng.permutation(np.arange(9000, 10000))])
    index.doc_ids = index.chunk_ids // 10
    index.text_keys = index.chunk_ids + 100_000
    index.eligible = index.doc_ids != 42  # one document still waits for vectors
    query = rng.standard_normal(dims).astype(np.float32)
    asked = [9500, 425, 3, 9001, 20000, 425, 4009, 10]  # out of order, repeated, and ids it does not hold

    def reference(chunk_ids: list[int]) -> dict[int, float]:
        return {int(index.chunk_ids[p]): float(index.vectors[p] @ query)
                for p in range(len(index.chunk_ids)) if index.chunk_ids[p] in chunk_ids and index.eligible[p]}

    found = index.exact_cosines(query, asked)
    assert found == pytest.approx(reference(asked)) and set(found) == {9500, 9001, 4009, 10}
    # A refresh replaces the ids: the next lookup reads the new ones, not a sorted copy of the old.
    index.chunk_ids = index.chunk_ids[::-1].copy()
    index.doc_ids = index.doc_ids[::-1].copy()
    index.text_keys = index.text_keys[::-1].copy()
    index.eligible = index.eligible[::-1].copy()
    assert index.exact_cosines(query, asked) == pytest.approx(reference(asked))
    index.codes = np.ascontiguousarray(to_words(sign_bits(index.vectors)).T)
    index._compact(index.chunk_ids != 9500)  # what a refresh does when a chunk is gone
    assert index.exact_cosines(query, asked) == pytest.approx(reference(asked)) and 9500 not in reference(asked)
    assert index.exact_cosines(query, []) == index.exact_cosines(query, [20000]) == {}
    assert VectorIndex(1, "empty").exact_cosines(query, [10]) == {}
