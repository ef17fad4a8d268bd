"""The lexical stage of ``search.related``: the source's most distinctive words ("more like this",
memoised per index generation) searched as a query, the source's own sections left out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from autodoc_core.retrieve import lexical, more_like_this
from autodoc_core.retrieve.lexical import Filters
from autodoc_core.retrieve.query import Term
from autodoc_core.search.answer import StageNote
from autodoc_core.search.search_run import SearchRun
from autodoc_core.search.stages import Stage
from autodoc_core.store import chunks
from autodoc_core.store.filters import NOT_ABSTRACT

if TYPE_CHECKING:
    from autodoc_core.related.sections import Source

OWN_SECTIONS_SKIPPED = 200  # the lexical stage asks for this many more candidates at most, for the source's own


def search_words(run: SearchRun, source: Source, frequencies: lexical.DocumentFrequencies,
                 pool: int, measured: Sequence[Term] = ()) -> tuple[list[int], dict[int, float], StageNote]:
    """The lexical ranking for the source's distinctive words, its own sections left out afterwards (a filter
    on the document would take FTS5 off its fast path of scoring the index alone), their BM25, and the stage's
    note. Of a search of several workspaces, the note's match is measured against what the words searched could
    score together with the words of ``measured`` (the source's own workspace's choice) that no section here
    holds, at their full weight."""
    own = {s.chunk_id for s in source.sections}
    wanted = pool + min(len(own), OWN_SECTIONS_SKIPPED)
    if not run.filters.document and run.filters.chunk == [NOT_ABSTRACT]:
        result = _fast_lexical(run, frequencies, wanted)
    else:
        result = lexical.search(run.conn, run.ws.id, run.query, run.filters, frequencies, wanted)
    ranked = [c for c in result.chunk_ids if c not in own][:pool]
    scores = {c: result.scores[c] for c in ranked if c in result.scores}
    match = None
    if run.several:
        searched = {term.text for term in run.query.terms}
        # a word of the source's own choice that some section here holds but this search did not ask for (it was
        # not among this workspace's most distinctive) cannot be scored here: it is left out, not held against it
        missing = [term for term in measured if term.text not in searched
                   and frequencies.matching(run.conn, run.ws.id, term) == 0]
        match = lexical.match_share(scores, lexical.attainable(run.conn, run.ws.id, [*run.query.terms, *missing],
                                                               frequencies))
    note = StageNote.ran(Stage.LEXICAL, strategy=result.strategy, candidates=len(result.chunk_ids),
                         common_terms_left_out=result.common_terms_left_out, lexical_match=match)
    return ranked, scores, note


ABSTRACTS_ALLOWED_FOR = 20  # the fast path asks for this many more candidates, for the abstracts it drops


def _fast_lexical(run: SearchRun, frequencies: lexical.DocumentFrequencies, wanted: int) -> lexical.LexicalResult:
    """The ranking with abstracts left out, as the filtered search ranks it, but from FTS5's fast path (the
    index scored alone, no join per matching section) with the abstracts dropped
    afterwards. When they took so many places that fewer than ``wanted`` are left, the filtered search."""
    asked = wanted + ABSTRACTS_ALLOWED_FOR
    result = lexical.search(run.conn, run.ws.id, run.query, Filters(), frequencies, asked)
    abstracts = chunks.abstracts_among(run.conn, result.chunk_ids)
    kept = [c for c in result.chunk_ids if c not in abstracts]
    if len(kept) < wanted and len(result.chunk_ids) == asked:
        return lexical.search(run.conn, run.ws.id, run.query, run.filters, frequencies, wanted)
    result.chunk_ids = kept[:wanted]
    return result


def words(run: SearchRun, source: Source, frequencies: lexical.DocumentFrequencies,
          least: int, foreign: bool = False) -> list[more_like_this.WeightedWord]:
    """The source's most distinctive words, those written at least ``least`` times first (memoised); ``foreign``:
    the source is in another workspace than the one searched (none of its sections is here)."""
    asked = ("section", source.section.chunk_id) if source.section is not None else ("document", source.doc_id)
    key = (*asked, hash(source.text), more_like_this.MORE_LIKE_THIS_TERMS, least,
           more_like_this.MORE_LIKE_THIS_POSTINGS, foreign)
    workspace, version = (run.conn.filename, run.ws.id), _version(run)
    return run.caches.words(workspace, version, key,
                            lambda: _distinctive_words(run, source, frequencies, least, foreign))


def _distinctive_words(run: SearchRun, source: Source, frequencies: lexical.DocumentFrequencies,
                       least: int, foreign: bool) -> list[more_like_this.WeightedWord]:
    # A section's words are not read in the rest of its document (reading it costs more than the word search
    # saves): a word only its own document has finds nothing and just takes a place. A section holds each of
    # its own.
    own = Counter() if source.section is not None else \
        more_like_this.sections_holding(run.conn, [f"{s.breadcrumb}\n{s.body}" for s in source.sections])
    if foreign:  # a word any section here holds finds it
        own = Counter(dict.fromkeys((stem for stem, _ in more_like_this.stems(run.conn, source.text)), 0))
    return more_like_this.distinctive_words(run.conn, run.ws.id, source.text, own, frequencies, _average_tokens(run),
                                            more_like_this.MORE_LIKE_THIS_TERMS, least,
                                            more_like_this.MORE_LIKE_THIS_POSTINGS)


def _version(run: SearchRun) -> tuple[float | None, int]:
    """The workspace's index as of this snapshot: when it was indexed and its generation (a workspace removed
    and added again takes the same id, and its sections the same ids and generations, at another time)."""
    return run.ws.indexed_at, run.ws.next_generation


CHARS_PER_WORD = 6.0


def _average_tokens(run: SearchRun) -> float:
    """The workspace's mean section length in words, as of this version of its index."""
    return run.caches.average_tokens.get((run.conn.filename, run.ws.id), _version(run),
                                         lambda: chunks.mean_body_chars(run.conn, run.ws.id) / CHARS_PER_WORD)
