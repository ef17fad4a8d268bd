"""A source's distinctive words read a common word's section count only when the choice depends on it: counted
up to the postings budget, a common word is known to be chosen only first, and to weigh at most what it would
at that count. The choice is the one exact counts give (the reference below is the choice as first written)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from autodoc_core.retrieve import more_like_this as mlt
from autodoc_core.retrieve.lexical import DocumentFrequencies
from autodoc_core.service.engine import Engine
from tests.conftest import write


def reference(conn, ws_id: int, text: str, own: Counter[str], average: float, count: int, least: int,
              max_postings: int, exact: DocumentFrequencies | None = None) -> list[mlt.WeightedWord]:
    """The choice from every stem's exact count (the vocabulary's)."""
    written: dict[str, str] = {}
    frequency: Counter[str] = Counter()
    for stem, word in mlt.stems(conn, text):
        if len(stem) < mlt.MIN_WORD_CHARS or stem.isdigit() or word.lower() in mlt.STOPWORDS:
            continue
        frequency[stem] += 1
        written.setdefault(stem, word)
    exact = exact or DocumentFrequencies()
    total = exact.total(conn, ws_id)
    saturation = mlt.BM25_K1 * (1 - mlt.BM25_B + mlt.BM25_B * sum(frequency.values()) / max(average, 1.0))
    df = exact.stem_counts(conn, ws_id, list(frequency))
    weighted = []
    for stem, tf in frequency.items():
        if df[stem] <= own.get(stem, 1):
            continue
        idf = math.log(1 + (total - df[stem] + 0.5) / (df[stem] + 0.5))
        weighted.append(mlt.WeightedWord(written[stem], stem, idf * tf * (mlt.BM25_K1 + 1) / (tf + saturation)))
    weighted.sort(key=lambda w: (frequency[w.stem] < least, -w.weight, w.stem))
    chosen, postings = [], 0
    for word in weighted:
        if len(chosen) == count or (chosen and postings + df[word.stem] > max_postings):
            break
        chosen.append(word)
        postings += df[word.stem]
    return chosen


@pytest.fixture
def counted(engine: Engine, kb: Path) -> tuple[Engine, int]:
    """30 notes: "harbour" in every one, "lantern" in 12, "quartz" in 4, "walrus" in 2, each note's own word once."""
    for i in range(30):
        words = ["harbour harbours"] + ["lantern"] * (i < 12) + ["quartz"] * (i < 4) + ["walrus"] * (i < 2)
        write(kb, f"n{i:02}.md", f"# Note {i}\n\n{' '.join(words)} unique{chr(97 + i % 26)}{i}.\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    engine.workspace_index("kb")
    with engine.store.snapshot() as conn:
        return engine, conn.execute("SELECT id FROM workspaces WHERE name = ?", ("kb",)).fetchone()[0]


TEXTS = ["harbour lantern quartz walrus", "Harbours harbour harbour lantern lantern quartz", "harbour harbours",
         "lantern quartz harbour walrus walrus lantern", "harbour walrus"]


@pytest.mark.parametrize("max_postings", [1, 3, 5, 11, 13, 29, 30, 1500])
def test_the_choice_is_the_one_exact_counts_give(counted: tuple[Engine, int], max_postings: int) -> None:
    engine, ws_id = counted
    with engine.store.snapshot() as conn:
        for text in TEXTS:
            for count, least, own in ((25, 1, Counter()), (2, 2, Counter()), (1, 1, Counter({"harbour": 40})),
                                      (25, 1, Counter({"lantern": 12, "quartz": 5}))):
                expected = reference(conn, ws_id, text, own, 6.0, count, least, max_postings)
                for bounded_from in (0, mlt.BOUNDED_COUNTS_FROM):  # counted up to the budget, and exactly
                    found = mlt.distinctive_words(conn, ws_id, text, own, DocumentFrequencies(), 6.0, count, least,
                                                  max_postings, bounded_from)
                    assert found == expected, (text, count, least, own, bounded_from)


def test_a_common_word_the_choice_never_reaches_is_not_counted_in_full(counted: tuple[Engine, int]) -> None:
    engine, ws_id = counted
    frequencies = DocumentFrequencies()
    with engine.store.snapshot() as conn:
        chosen = mlt.distinctive_words(conn, ws_id, "harbour lantern quartz walrus", Counter(), frequencies, 6.0,
                                       25, 1, 6, bounded_from=0)
        assert [w.word for w in chosen] == ["walrus", "quartz"]  # 2 + 4 postings: the budget
        assert frequencies._cached(ws_id, "harbour", 0.0) is None  # never counted past the budget
        # Alone, the common word is the first reached: its exact count is read, and it is chosen.
        alone = mlt.distinctive_words(conn, ws_id, "harbour harbour", Counter(), frequencies, 6.0, 25, 1, 6,
                                     bounded_from=0)
        assert [(w.word, w.stem) for w in alone] == [("harbour", "harbour")]
        assert frequencies.stem_counts(conn, ws_id, ["harbour"]) == {"harbour": 30}
