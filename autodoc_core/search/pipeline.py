"""One search: parse the query and options, run the requested stages, fuse, shape, and say what ran.

    parse -> lexical (+ query embedding in its own thread) -> symbol -> semantic -> fuse -> rerank -> shape

Each stage is a function that takes what it needs and returns what it found with a ``StageNote`` (what it
performed or skipped and why, what it measured); ``run_search`` composes them, laps its ``Timer`` after
each, and makes the answer from the notes (``answer.SearchAnswer`` carries both). ``search_run`` holds what
a search and a related search share.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import apsw
import numpy as np

from autodoc_core.errors import AutodocError, invalid_params
from autodoc_core.parse.frontmatter import FacetSchema
from autodoc_core.providers.rankers import Ranker
from autodoc_core.rank import fuse, hits
from autodoc_core.rank.hits import Hit
from autodoc_core.retrieve import lexical, semantic_stage, symbols
from autodoc_core.retrieve.filters import build_filters
from autodoc_core.retrieve.options import parse_options, wants_semantic
from autodoc_core.retrieve.query import ParsedQuery, fts_tokens, parse_query
from autodoc_core.retrieve.semantic_stage import SemanticSource
from autodoc_core.search.answer import NOTHING_TO_SAY, FusionWeight, SearchAnswer, StageNote, Timer
from autodoc_core.search.caches import SearchCaches
from autodoc_core.search.search_run import (
    SearchRun,
    answer_of,
    facet_only,
    ranker_note,
    rerank_hits,
    rows_of,
    unmatched_facets,
    unmatched_paths,
    with_snippets,
)
from autodoc_core.search.stages import Candidates, Stage
from autodoc_core.search.stream import SearchStream
from autodoc_core.store import documents
from autodoc_core.store.workspace import Workspace, median_sections_per_document

__all__ = ["SemanticSource", "run_search", "wants_semantic"]

FILL_FACTOR, FILL_ROUNDS = 4, 2  # see _filled


def run_search(conn: apsw.Connection, ws: Workspace, schema: FacetSchema, text: Any, opts: Any,
               frequencies: lexical.DocumentFrequencies, semantic: SemanticSource,
               ranker: Ranker | None = None, stream: SearchStream | None = None,
               caches: SearchCaches | None = None, several: bool = False) -> SearchAnswer:
    """One search's answer; with a ``stream``, the lexical answer is handed over first and the search stops at
    the next stage boundary once ``stream.cancelled``. ``caches``: what the engine remembers between
    searches (none when not given). ``several``: one of a search of several workspaces (search.scope), which
    compares their hits by their BM25 over the most the query's words could score here (measured only then)."""
    timer = Timer()
    if not isinstance(text, str):
        raise invalid_params(f"query must be a string, got {type(text).__name__}")
    options = parse_options(opts, ws, schema)
    query = parse_query(text, schema)
    facets = query.facets + options.facets
    filters = build_filters(facets, options.paths, options.abstract_chunk, ws.id)
    run = SearchRun(conn, ws, query, options, facets, filters, semantic, caches or SearchCaches(),
                    symbols.classify(query.semantic_text, query.typed_text), several)
    notes = [unmatched_paths(run), unmatched_facets(run)]
    timer.lap("parse")
    notes.append(ranker_note(options.stages, ranker))
    if not query.terms and facets:
        listed, note = facet_only(run, ranker)
        timer.lap("facet")
        return answer_of(run, [*notes, note], listed, timer, "facet")

    semantic_runs, note = _semantic_plan(run)
    notes.append(note)
    woken = stream.woken if stream is not None else None  # a streamed search waits on it (SearchStream.wait)
    embedding = semantic_stage.start_query_embedding(query, semantic, woken) if semantic_runs else None
    found: dict[Stage, Candidates] = {}  # by retriever, in the order they ran
    pool = max(lexical.CANDIDATES, options.limit)  # each retriever's candidates (their constants agree)
    if Stage.LEXICAL in options.stages:
        found[Stage.LEXICAL], note = _lexical(run, frequencies, pool)
        notes.append(note)
        timer.lap("lexical")
    if run.shape.shape == "identifier" and options.symbol and Stage.LEXICAL in options.stages:  # its words' stage
        found[Stage.SYMBOL] = _symbol_ranking(run, _ids(found, Stage.LEXICAL), pool)
        notes.append(StageNote.ran(Stage.SYMBOL))
        timer.lap("symbol")
    notes.append(StageNote.measured(shape=run.shape))
    if stream is not None:
        later = [Stage.SEMANTIC] * semantic_runs + [Stage.RERANK] * bool(ranker and Stage.RERANK in options.stages)
        _hand_over_lexical(run, notes, timer, stream, found, pool, frequencies, later)
        if embedding is not None:
            remote = semantic.embedder is not None and semantic.embedder.remote
            stream.wait(ws.option("semantic_deadline") if remote else None, Stage.SEMANTIC)
    nearest = None
    if semantic_runs:
        query_vector = semantic_stage.collect(embedding, semantic, ws.option("semantic_deadline"))
        if embedding is not None:
            timer.lap("embed_wait")
            if query_vector.embed_ms is not None:
                timer.ms["embed"] = query_vector.embed_ms
        nearest, note = _semantic(run, query_vector, pool)
        notes.append(note)
        if nearest is not None:
            timer.lap("semantic")
            found[Stage.SEMANTIC] = _blended(run, nearest, _ids(found, Stage.LEXICAL))
    fused = _fused_and_filled(run, found, pool, frequencies, nearest)
    notes.append(fused.note)
    if fused.holding_pasted == 0 and run.shape.literal and not run.several:  # several: said once merged
        notes.append(StageNote(problems=(symbols.held_nowhere(run.shape.literal, bool(run.filters.document)),)))
    ranked = fused.hits
    timer.lap("fuse")
    if ranker is not None and Stage.RERANK in options.stages:
        if stream is not None:
            stream.check(Stage.RERANK)
        ranked, note = rerank_hits(run, ranked, ranker)
        notes.append(note)
        timer.lap("rerank")
    if stream is not None:
        stream.check(Stage.SHAPE)
    shown = _shown(run, ranked)
    timer.lap("shape")
    return answer_of(run, notes, shown, timer)


def _semantic_plan(run: SearchRun) -> tuple[bool, StageNote]:
    """Whether the semantic stage runs, and why not when it was asked for: a query with no words (its vector
    would rank at random), or words the encoder does not know beside a lexical stage (nearest sections,
    unrelated, would be shown beside the word matches); asked for by meaning alone, it runs, and says so."""
    if Stage.SEMANTIC not in run.options.stages:
        return False, NOTHING_TO_SAY
    if not fts_tokens(run.query.semantic_text):  # "???", "-"
        return False, StageNote.skip(Stage.SEMANTIC, "the query has no words to search for")
    if semantic_stage.english_only_for(run.query, run.semantic):
        if Stage.LEXICAL in run.options.stages:
            return False, StageNote.skip(Stage.SEMANTIC, semantic_stage.ENGLISH_ONLY_SKIP)
        return True, StageNote(problems=(semantic_stage.ENGLISH_ONLY_NOTE,))
    return True, NOTHING_TO_SAY


def _hand_over_lexical(run: SearchRun, notes: list[StageNote], timer: Timer, stream: SearchStream,
                       found: dict[Stage, Candidates], pool: int, frequencies: lexical.DocumentFrequencies,
                       later: list[Stage]) -> None:
    """Hand the stream the hits a lexical-only search gives (lexical and symbol rankings), marked partial with the
    ``later`` stages still to run, when there are any; then stop if a newer query came meanwhile."""
    if later and Stage.LEXICAL in found and stream.wants_partial:
        fused = _fused_and_filled(run, found, pool, frequencies, None)
        answer = answer_of(run, [*notes, fused.note], _shown(run, fused.hits), timer)
        stream.hand_over(answer.as_partial(later))
        timer.lap("partial")
    stream.check(later[0] if later else Stage.FUSE)


@dataclass(frozen=True)
class Fused:
    """A fusion's hits, best first, and what it found out on the way, for the query info of the answer made
    from them: how many candidates hold what was pasted, the blend's weight, what a fill added."""

    hits: list[Hit]
    holding_pasted: int | None = None
    fusion_weight: FusionWeight | None = None
    filled: tuple[int, int] | None = None

    @property
    def note(self) -> StageNote:
        return StageNote.measured(holding_pasted=self.holding_pasted, fusion_weight=self.fusion_weight,
                                  filled=self.filled)


def _fused_and_filled(run: SearchRun, found: dict[Stage, Candidates], pool: int,
                      frequencies: lexical.DocumentFrequencies, nearest: SemanticFound | None) -> Fused:
    """The fused hits, filled from wider rounds when fewer than the limit."""
    fused = _fused_hits(run, found)
    if len(fused.hits) < run.options.limit:
        filled, added = _filled(run, fused.hits, found, pool, frequencies, nearest)
        fused = dataclasses.replace(fused, hits=filled, filled=added)
    return fused


def _shown(run: SearchRun, ranked: list[Hit]) -> list[Hit]:
    """The hits shown: superseded ones demoted (when asked), cut to the limit, with their snippets."""
    if run.options.demote_superseded:
        ranked = hits.demote_superseded(ranked)
    return with_snippets(run, ranked[: run.options.limit])


def _ids(found: dict[Stage, Candidates], stage: Stage) -> list[int]:
    return found[stage].chunk_ids if stage in found else []


def _lexical(run: SearchRun, frequencies: lexical.DocumentFrequencies, pool: int) -> tuple[Candidates, StageNote]:
    result = _lexical_ranking(run, frequencies, pool)
    attainable = match = prevalence = sections = None
    if run.several:
        attainable = lexical.attainable(run.conn, run.ws.id, run.query.terms, frequencies)
        match = lexical.match_share(result.scores, attainable)
        prevalence = lexical.prevalence(run.conn, run.ws.id, run.query.terms, frequencies)
        sections = frequencies.total(run.conn, run.ws.id)
    note = StageNote.ran(Stage.LEXICAL, strategy=result.strategy, candidates=len(result.chunk_ids),
                         common_terms_left_out=result.common_terms_left_out, lexical_attainable=attainable,
                         lexical_match=match, lexical_prevalence=prevalence, lexical_sections=sections)
    return Candidates(result.chunk_ids, result.scores), note


def _lexical_ranking(run: SearchRun, frequencies: lexical.DocumentFrequencies, pool: int) -> lexical.LexicalResult:
    return lexical.search(run.conn, run.ws.id, run.query, run.filters, frequencies, pool)


def _symbol_ranking(run: SearchRun, lexical_ids: list[int], pool: int) -> Candidates:
    # Only a pasted identifier has its lexical candidates read for it: in a sentence ("p16INK4A degradation
    # is encoded by CDKN2A") the words around it rank them better.
    read = lexical_ids if run.shape.pasted else []
    return Candidates(symbols.search(run.conn, run.ws.id, run.shape.tokens, run.filters, pool, read, run.folded))


@dataclass
class SemanticFound:
    """The semantic retriever's own candidates and cosines, and the query vector (asked again to fill)."""

    chunk_ids: list[int]
    cosines: dict[int, float]
    vector: np.ndarray


def _semantic(run: SearchRun, query_vector: semantic_stage.QueryVector,
              pool: int) -> tuple[SemanticFound | None, StageNote]:
    """The semantic ranking, or None when the stage was skipped (its note says why); a semantic-only search
    that cannot run raises its error."""
    if query_vector.failure is not None:
        reason, code = query_vector.failure
        if Stage.LEXICAL not in run.options.stages:
            raise AutodocError(code, reason, stage=str(Stage.SEMANTIC))
        return None, StageNote.skip(Stage.SEMANTIC, reason)
    found = _semantic_ranking(run, query_vector.vector, pool)
    note = StageNote.ran(Stage.SEMANTIC, semantic_scanned=found.scanned, semantic_shortlist=found.shortlist,
                         names_encoder=True, encoder=run.semantic.embedder.encoder_name if run.semantic.embedder
                         else None, semantic_match=max(found.cosines.values(), default=None))
    return SemanticFound(found.chunk_ids, found.cosines, query_vector.vector), note


def _semantic_ranking(run: SearchRun, vector: np.ndarray, pool: int) -> semantic_stage.SemanticResult:
    return semantic_stage.recall(run.conn, run.ws.id, vector, run.filters, run.semantic.index, pool)


def _blended(run: SearchRun, found: SemanticFound, lexical_ids: list[int]) -> Candidates:
    """The semantic candidates as the blend takes them: it scores every candidate on both scales, so lexical
    candidates the semantic stage did not return get their exact cosine."""
    missing = [c for c in lexical_ids if c not in found.cosines]
    if not missing or run.ws.option("fusion") != "linear" or run.semantic.index is None:
        return Candidates(found.chunk_ids, found.cosines)
    return Candidates(found.chunk_ids, {**found.cosines, **run.semantic.index.exact_cosines(found.vector, missing)})


def _fused_hits(run: SearchRun, found: dict[Stage, Candidates]) -> Fused:
    """Fused, boosted hits, at most MAX_PER_DOCUMENT per document, best first."""
    ws = run.ws
    rows = rows_of(run, list(dict.fromkeys(c for candidates in found.values() for c in candidates.chunk_ids)))
    # Vectors come from memory: drop chunks this snapshot does not have, or that filters exclude (the
    # vector index knows no chunk kinds), before they take part in the blend's scaling.
    rows = {c: row for c, row in rows.items() if run.options.abstract_chunk or row.kind != "abstract"}
    found = {stage: candidates.kept(rows) for stage, candidates in found.items()}
    linear = ws.option("fusion") == "linear" and Stage.SEMANTIC in found
    weight_used = None
    if linear:
        doc_of = {chunk_id: row.doc_id for chunk_id, row in rows.items()}
        weight, weight_used = _fusion_weight(run, found)
        fused = fuse.linear(found, doc_of, weight)
    else:
        fused = fuse.rrf(found)
    most_inbound = documents.most_inbound(run.conn, ws.id)
    query = run.query
    sentence = Stage.SYMBOL in found and not run.shape.pasted  # words around its identifiers
    words = set(query.words) | {f.value.lower() for f in query.facets if f.field == "tag" and not f.negated}
    fused = fuse.apply_boosts(fused, {f.chunk_id: rows[f.chunk_id].tags for f in fused},
                              {f.chunk_id: rows[f.chunk_id].inbound_links for f in fused}, most_inbound, words)
    fused = fuse.keep_leaders(fused, found, found[Stage.SEMANTIC].scores if linear else None,
                              one_word=one_word(query), pasted=run.shape.pasted, sentence=sentence)
    holding = pasted_holders(run, found, [f.chunk_id for f in fused])
    leading = holding if holding is not None and Stage.SEMANTIC in found else None  # words alone keep their order
    if leading is not None:
        fused = fuse.holders_first(fused, leading)
    if sentence:
        fused = fuse.symbol_only_last(fused)
    shown = hits.cap_per_document([hits.section_hit(rows[f.chunk_id], f.relevance, f.score, f.via) for f in fused])
    bm25, cosines = (found[stage].scores if stage in found else {} for stage in (Stage.LEXICAL, Stage.SEMANTIC))
    for hit in shown:
        hit.bm25, hit.cosine = bm25.get(hit.chunk_id), cosines.get(hit.chunk_id)
        hit.holds_pasted = leading is not None and hit.chunk_id in leading
    return Fused(shown, None if holding is None else len(holding), weight_used)


def _filled(run: SearchRun, ranked: list[Hit], found: dict[Stage, Candidates], pool: int,
            frequencies: lexical.DocumentFrequencies,
            nearest: SemanticFound | None) -> tuple[list[Hit], tuple[int, int] | None]:
    """Hits up to the limit where the per-document cap left fewer: a few long documents can fill a
    retriever's candidates. When one came back full, the retrievers are asked again for ``FILL_FACTOR`` times
    as many (twice at most), and the sections that adds go below the ranked ones, so the fused order of the
    first hits does not depend on the limit (demotion and re-ranking come after, over the whole list). Returns
    the hits and, when the fill added some, (candidates asked for, hits added): the query info keeps the first
    round's figures."""
    before = len(ranked)
    for _ in range(FILL_ROUNDS):
        if len(ranked) >= run.options.limit or not any(len(c.chunk_ids) >= pool for c in found.values()):
            break
        found, nearest = _wider(run, found, nearest, pool, frequencies)
        pool *= FILL_FACTOR
        shown = {hit.chunk_id for hit in ranked}
        more = [hit for hit in _fused_hits(run, found).hits if hit.chunk_id not in shown]
        ranked = hits.cap_per_document(ranked + more)
    added = min(len(ranked), run.options.limit) - before
    return ranked, (pool, added) if added else None


def _wider(run: SearchRun, found: dict[Stage, Candidates], nearest: SemanticFound | None, pool: int,
           frequencies: lexical.DocumentFrequencies) -> tuple[dict[Stage, Candidates], SemanticFound | None]:
    """The same retrievers as ``found`` came from (asked for ``pool`` candidates each), each asked for
    ``FILL_FACTOR`` times as many; lexical or semantic, having returned fewer than ``pool``, returned all it
    has and is not asked again (the symbol retriever, reading the lexical list, always is). Returns their
    candidates and the semantic retriever's own."""
    wider = dict(found)
    if Stage.LEXICAL in found and len(found[Stage.LEXICAL].chunk_ids) >= pool:
        result = _lexical_ranking(run, frequencies, pool * FILL_FACTOR)
        wider[Stage.LEXICAL] = Candidates(result.chunk_ids, result.scores)
    if Stage.SYMBOL in found:
        wider[Stage.SYMBOL] = _symbol_ranking(run, _ids(wider, Stage.LEXICAL), pool * FILL_FACTOR)
    if Stage.SEMANTIC in found and nearest is not None:
        if len(nearest.chunk_ids) >= pool:
            recalled = _semantic_ranking(run, nearest.vector, pool * FILL_FACTOR)
            nearest = SemanticFound(recalled.chunk_ids, recalled.cosines, nearest.vector)
        wider[Stage.SEMANTIC] = _blended(run, nearest, _ids(wider, Stage.LEXICAL))
    return wider, nearest


def pasted_holders(run: SearchRun, found: dict[Stage, Candidates], chunk_ids: list[int]) -> set[int] | None:
    """The candidates whose text holds what was pasted (``fuse.holders_first``): an identifier alone, or a
    query of ``symbols.PHRASE_MIN_WORDS`` or more words word for word (an error or log line), when the word
    search took part (they come first when the semantic stage did too: a retriever alone keeps its own order;
    by words alone a pasted identifier's are counted, to say when none holds it); None where the rule does not
    apply. For a phrase only the first lexical candidates are read (``symbols.PHRASE_CANDIDATES``): a chunk
    holding the line holds all of its words."""
    if Stage.LEXICAL not in found or (Stage.SEMANTIC not in found and not run.shape.literal):
        return None  # by words alone only an identifier's holders are counted (what says it is held nowhere)
    if run.shape.literal:
        return symbols.holding(run.conn, run.shape.literal, chunk_ids, run.folded)
    if run.shape.phrase:
        first = found[Stage.LEXICAL].chunk_ids[: symbols.PHRASE_CANDIDATES]
        return symbols.holding_phrase(run.conn, run.shape.phrase, [c for c in first if c in chunk_ids], run.folded)
    return None


def one_word(query: ParsedQuery) -> bool:
    """The query as typed is one word (``fuse.keep_leaders`` does not check its lexical leader); not its
    terms: BM25 keeps "risks" alone of "what are the risks?"."""
    return len(query.semantic_text.split()) == 1


def _fusion_weight(run: SearchRun, found: dict[Stage, Candidates]) -> tuple[float, FusionWeight]:
    """The workspace's lexical weight, for ``fuse.linear``, and what the answer's query info says of it: what
    the blend used (an identifier-shaped query's own weight, see ``fuse.blend_weight``) and where it came from."""
    weight, said = workspace_weight(run)
    return weight, dataclasses.replace(said, value=fuse.blend_weight(found, weight),
                                       identifier_query=Stage.SYMBOL in found)


def workspace_weight(run: SearchRun) -> tuple[float, FusionWeight]:
    """The workspace's ``fusion_weight``, or for "auto" the weight its document shape calls for (the median
    is recounted when the workspace's generation moves), and how it was found."""
    setting = run.ws.option("fusion_weight")
    if setting != "auto":
        return float(setting), FusionWeight(setting, auto=False)
    median = run.caches.sections_per_document.get((run.conn.filename, run.ws.id, run.ws.root),
                                                  run.ws.next_generation,
                                                  lambda: median_sections_per_document(run.conn, run.ws.id))
    weight = round(fuse.auto_weight(median), 3)
    return weight, FusionWeight(weight, auto=True, sections_per_document=median)
