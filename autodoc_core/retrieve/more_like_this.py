""""More like this": a text's most distinctive words by their BM25 weight, to be searched as a query.

Each word is weighed as BM25 would weigh it if the text were a document of the workspace: its inverse
document frequency among the workspace's sections, times its saturated frequency in the text. Words only
the source document has find nothing else, and stopwords, numbers and two-letter words say little: all
are left out. Words are grouped by their stem (the index's own porter tokenizer), and each is searched as
it was first written.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import apsw

from autodoc_core.retrieve.lexical import DocumentFrequencies
from autodoc_core.retrieve.query import STOPWORDS

# Chosen on the KEPs' citation pairs with tests/bench/related.py (doc/benchmarks/related.md).
MORE_LIKE_THIS_TERMS = 25
# The words' postings together at most (FTS5 scores every section an OR matches: its cost grows with them).
MORE_LIKE_THIS_POSTINGS = 1500
BM25_K1, BM25_B = 1.2, 0.75
# From this many sections a stem's count is read only up to the postings budget (``counts_up_to``), unless the
# choice depends on more: in a small index a query per stem costs more than the vocabulary's few postings, in a
# large one the bound saves reading long posting lists. The answer is the same either way.
BOUNDED_COUNTS_FROM = 100_000
MIN_WORD_CHARS = 3


@dataclass(frozen=True)
class WeightedWord:
    word: str  # as first written in the text
    stem: str
    weight: float


def stems(conn: apsw.Connection, text: str) -> list[tuple[str, str]]:
    """(stem, the word as written) for each word of ``text``, in order."""
    data = text.encode("utf-8", "replace")
    tokenize = conn.fts5_tokenizer("porter", ["unicode61"])
    return [(token[2], data[token[0] : token[1]].decode("utf-8", "replace"))
            for token in tokenize(data, apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True)]


def distinctive_words(conn: apsw.Connection, ws_id: int, text: str, own_sections: Counter[str],
                      frequencies: DocumentFrequencies, average_tokens: float,
                      count: int = MORE_LIKE_THIS_TERMS, least_frequency: int = 1,
                      max_postings: int = MORE_LIKE_THIS_POSTINGS,
                      bounded_from: int = BOUNDED_COUNTS_FROM) -> list[WeightedWord]:
    """The ``count`` words of ``text`` with the highest BM25 weight, those written at least ``least_frequency``
    times first, until their postings (the sections holding them) would pass ``max_postings``.
    ``own_sections``: how many of the source document's sections hold each stem (a word in no other section
    of the workspace finds nothing); ``average_tokens``: the workspace's mean section length, for BM25's
    length normalisation; ``bounded_from``: see ``BOUNDED_COUNTS_FROM``."""
    written: dict[str, str] = {}
    frequency: Counter[str] = Counter()
    for stem, word in stems(conn, text):
        if len(stem) < MIN_WORD_CHARS or stem.isdigit() or word.lower() in STOPWORDS:
            continue
        frequency[stem] += 1
        written.setdefault(stem, word)
    total = frequencies.total(conn, ws_id)
    length = sum(frequency.values())
    weighing = Weighing(total, BM25_K1 * (1 - BM25_B + BM25_B * length / max(average_tokens, 1.0)), frequency,
                        own_sections, least_frequency)
    # A stem in more sections than the postings budget allows is chosen only as the first word, and it weighs at
    # most what it would at that count: its exact count is read only when the choice reaches it so weighed.
    if total >= bounded_from:
        document_frequency, at_least = frequencies.counts_up_to(conn, ws_id, written, max_postings + 1)
    else:
        document_frequency, at_least = frequencies.stem_counts(conn, ws_id, list(written)), set()
    while True:
        chosen, unsure = _choose(weighing, written, document_frequency, at_least, count, max_postings)
        if not unsure:
            return chosen
        document_frequency.update(frequencies.stem_counts(conn, ws_id, sorted(unsure)))
        at_least -= unsure


@dataclass(frozen=True)
class Weighing:
    total: int  # the workspace's sections
    saturation: float  # BM25's k1 times the text's length normalisation
    frequency: Counter[str]  # in the text, by stem
    own_sections: Counter[str]
    least_frequency: int

    def weight(self, stem: str, df: int) -> float:
        tf = self.frequency[stem]
        idf = math.log(1 + (self.total - df + 0.5) / (df + 0.5))
        return idf * tf * (BM25_K1 + 1) / (tf + self.saturation)


def _choose(weighing: Weighing, written: dict[str, str], document_frequency: dict[str, int], at_least: set[str],
            count: int, max_postings: int) -> tuple[list[WeightedWord], set[str]]:
    """The words by weight, those written at least ``least_frequency`` times first, until ``count`` or the
    postings budget; and the stems of ``at_least`` (counts that are a lower bound) the choice depends on: a
    stem the own-sections test cannot tell, else the first reached. Empty: the choice is the exact one."""
    undecided = {s for s in at_least if document_frequency[s] <= weighing.own_sections.get(s, 1)}
    if undecided:
        return [], undecided
    weighted = [WeightedWord(written[stem], stem, weighing.weight(stem, df)) for stem, df in document_frequency.items()
                if df > weighing.own_sections.get(stem, 1)]
    # Words written less often than asked come after the others, not never: a short note has few repeated.
    weighted.sort(key=lambda w: (weighing.frequency[w.stem] < weighing.least_frequency, -w.weight, w.stem))
    chosen: list[WeightedWord] = []
    postings = 0
    for position, word in enumerate(weighted):
        df = document_frequency[word.stem]
        if len(chosen) == count:
            break
        if word.stem in at_least:
            # Its place is this one or later, and it ends the choice wherever it is, unless it would be the
            # first: only the next known word tells, when that would still fit the budget.
            after = next((w for w in weighted[position + 1 :] if w.stem not in at_least), None)
            fits = after is not None and postings + document_frequency[after.stem] <= max_postings
            return (chosen, {word.stem}) if not chosen or fits else (chosen, set())
        if chosen and postings + df > max_postings:
            break
        chosen.append(word)
        postings += df
    return chosen, set()


def sections_holding(conn: apsw.Connection, texts: list[str]) -> Counter[str]:
    """How many of these texts hold each stem."""
    held: Counter[str] = Counter()
    for text in texts:
        held.update({stem for stem, _ in stems(conn, text)})
    return held


class WordsMemo:
    """A source's distinctive words, remembered per workspace (database, id) and version of its index (when it
    was indexed, its generation), by the source (a chunk id or a document's, and its text) and the parameters
    they were chosen with: asking again about the same section (the live side list, a picker's stage toggle)
    skips tokenising it and reading its words' frequencies. Any index write moves the version, and a word's
    frequency changes only with one: a workspace's words of another version are dropped when one is asked
    for. (A workspace removed and added again takes the same id, and its sections the same ids and
    generations: it is indexed at another time.)"""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._workspaces: dict[tuple[str, int], tuple[tuple, dict[tuple, list[WeightedWord]]]] = {}
        self.hits = 0

    def get(self, workspace: tuple[str, int], version: tuple, key: tuple) -> list[WeightedWord] | None:
        held_version, words = self._workspaces.get(workspace, (None, {}))
        found = words.get(key) if held_version == version else None
        self.hits += found is not None
        return found

    def put(self, workspace: tuple[str, int], version: tuple, key: tuple, words: list[WeightedWord]) -> None:
        held_version, held = self._workspaces.get(workspace, (None, {}))
        if held_version != version:
            held = {}
            self._workspaces[workspace] = (version, held)
        if len(held) >= self.size:
            del held[next(iter(held))]  # the oldest
        held[key] = words
