"""One search: parse the query and options, run the requested stages, fuse, shape, and say what ran.

    parse -> lexical (+ query embedding in its own thread) -> symbol -> semantic -> fuse -> rerank -> shape

Each stage is a function that takes what it needs and returns what it found; ``StageReport``
collects what was requested, performed and skipped (with the reason), and ``Timer`` how long each
took. Every answer carries both.

Over 400 lines for now: the search's control flow (streaming, cancellation between stages) is being
reworked here, and the typed stage records of issue 31 (item 4) will take the rankings and the report out.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import apsw
import numpy as np

from autodoc_core.errors import AutodocError, invalid_params
from autodoc_core.parse.frontmatter import FacetSchema, folded_twin
from autodoc_core.providers.base import Pending
from autodoc_core.providers.rankers import Ranker
from autodoc_core.rank import fuse, hits
from autodoc_core.rank.hits import Hit
from autodoc_core.rank.rerank import rerank
from autodoc_core.retrieve import lexical, semantic_stage, symbols
from autodoc_core.retrieve.filters import build_filters
from autodoc_core.retrieve.options import SearchOptions, parse_options, wants_semantic
from autodoc_core.retrieve.query import NO_MATCH, FacetFilter, ParsedQuery, fts_tokens, parse_query
from autodoc_core.retrieve.semantic_stage import SemanticSource
from autodoc_core.store import documents, facets
from autodoc_core.store.filters import Filters
from autodoc_core.store.workspace import Workspace, median_sections_per_document
from autodoc_core.stream import SearchStream

__all__ = ["SemanticSource", "run_search", "wants_semantic"]

FILL_FACTOR, FILL_ROUNDS = 4, 2  # see _filled
FACET_VALUES_NAMED = 6  # a facet value no document has: the field's most common values, named in the problem


class Timer:
    """Milliseconds per stage, each lap measured from the end of the one before."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.last = self.started
        self.ms: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[name] = round((now - self.last) * 1000, 3)
        self.last = now

    def done(self) -> dict[str, float]:
        self.ms["total"] = round((time.perf_counter() - self.started) * 1000, 3)
        return self.ms


@dataclass
class StageReport:
    """What a search was asked to run, what it ran, what it skipped and why; the ranker's state."""

    requested: list[str]
    performed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    rank: dict[str, Any] = field(default_factory=lambda: {"state": "off", "model": None, "error": None})
    query_info: dict[str, Any] = field(default_factory=dict)  # strategy, candidate counts, query shape

    def as_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "performed": self.performed, "skipped": self.skipped}

    @property
    def mode_used(self) -> str:
        retrievers = [p for p in self.performed if p in ("lexical", "semantic")]
        return "hybrid" if len(retrievers) > 1 else (retrievers[0] if retrievers else "none")


@dataclass
class SearchRun:
    """Everything one search works with, parsed and checked."""

    conn: apsw.Connection
    ws: Workspace
    query: ParsedQuery
    options: SearchOptions
    facets: list[FacetFilter]
    filters: Filters
    semantic: SemanticSource
    report: StageReport
    timer: Timer
    shape: symbols.QueryShape = field(default_factory=lambda: symbols.QueryShape("text"))
    folded: dict[int, tuple[str, str]] = field(default_factory=dict)  # chunk texts the symbol rules have read
    rows: dict[int, hits.HitRow] = field(default_factory=dict)  # read once, for the hand-over and the final answer
    snippets: dict[int, str] = field(default_factory=dict)  # by chunk id, likewise


def run_search(conn: apsw.Connection, ws: Workspace, schema: FacetSchema, text: Any, opts: Any,
               frequencies: lexical.DocumentFrequencies, semantic: SemanticSource,
               ranker: Ranker | None = None, stream: SearchStream | None = None) -> dict[str, Any]:
    """One search's answer; with a ``stream``, the lexical answer is handed over first and the search stops at
    the next stage boundary once ``stream.cancelled()``."""
    timer = Timer()
    if not isinstance(text, str):
        raise invalid_params(f"query must be a string, got {type(text).__name__}")
    options = parse_options(opts, ws, schema)
    query = parse_query(text, schema)
    facets = query.facets + options.facets
    filters = build_filters(facets, options.paths, options.abstract_chunk, ws.id)
    run = SearchRun(conn, ws, query, options, facets, filters, semantic, StageReport(options.stages), timer)
    _report_unmatched_paths(run)
    _report_unmatched_facets(run)
    timer.lap("parse")
    _report_ranker(run.report, ranker)
    if not query.terms and facets:
        return _answer(run, _facet_only(run, ranker), "facet")

    semantic_runs = "semantic" in options.stages
    if semantic_runs and not fts_tokens(query.semantic_text):  # "???", "-": its vector would rank at random
        run.report.skipped["semantic"] = "the query has no words to search for"
        semantic_runs = False
    if semantic_runs and semantic_stage.english_only_for(query, semantic):
        if "lexical" in options.stages:  # nearest sections, unrelated, would be shown beside the word matches
            run.report.skipped["semantic"] = semantic_stage.ENGLISH_ONLY_SKIP
            semantic_runs = False
        else:  # asked for by meaning alone: given, and said
            query.problems.append(semantic_stage.ENGLISH_ONLY_NOTE)
    embedded = threading.Event()
    embedding = semantic_stage.start_query_embedding(query, semantic, embedded) if semantic_runs else None
    rankings: dict[str, list[int]] = {}
    bm25: dict[int, float] = {}
    pool = max(lexical.CANDIDATES, options.limit)  # each retriever's candidates (their constants agree)
    if "lexical" in options.stages:
        rankings["lexical"], bm25 = _lexical(run, frequencies, pool)
    run.shape = query_shape = symbols.classify(query.semantic_text, query.typed_text)
    if query_shape.shape == "identifier" and options.symbol:
        rankings["symbol"] = _symbols(run, rankings.get("lexical", []), pool)
    run.report.query_info["query_shape"] = query_shape.as_dict()
    if stream is not None:
        later = (["semantic"] if semantic_runs else []) + (["rerank"] if ranker and "rerank" in options.stages else [])
        _hand_over_lexical(run, stream, rankings, bm25, pool, frequencies, later)
        if embedding is not None:
            remote = semantic.embedder is not None and semantic.embedder.remote
            stream.wait(embedded, ws.option("semantic_deadline") if remote else None, "semantic")
    cosines: dict[int, float] = {}
    found = _semantic(run, embedding, pool) if semantic_runs else None
    if found is not None:
        rankings["semantic"] = found.chunk_ids
        cosines = _blend_cosines(run, found, rankings.get("lexical", []))
    ranked = _fused_hits(run, rankings, bm25, cosines)
    if len(ranked) < options.limit:
        ranked = _filled(run, ranked, rankings, bm25, pool, frequencies, found)
    timer.lap("fuse")
    if ranker is not None and "rerank" in options.stages:
        if stream is not None:
            stream.check("rerank")
        ranked = _rerank(run, ranked, ranker)
    if stream is not None:
        stream.check("shape")
    if options.demote_superseded:
        ranked = hits.demote_superseded(ranked)
    shown = _with_snippets(run, ranked[: options.limit])
    timer.lap("shape")
    return _answer(run, shown, run.report.mode_used)


def _hand_over_lexical(run: SearchRun, stream: SearchStream, rankings: dict[str, list[int]], bm25: dict[int, float],
                       pool: int, frequencies: lexical.DocumentFrequencies, later: list[str]) -> None:
    """Hand the stream the hits a lexical-only search gives (lexical and symbol rankings), marked partial with the
    ``later`` stages still to run, when there are any; then stop if a newer query came meanwhile."""
    if later and "lexical" in rankings and stream.on_partial is not None:
        info = copy.deepcopy(run.report.query_info)
        ranked = _fused_hits(run, rankings, bm25, {})
        if len(ranked) < run.options.limit:
            ranked = _filled(run, ranked, rankings, bm25, pool, frequencies, None)
        if run.options.demote_superseded:
            ranked = hits.demote_superseded(ranked)
        answer = _answer(run, _with_snippets(run, ranked[: run.options.limit]), run.report.mode_used)
        run.report.query_info = info  # the answer keeps the objects it was given; the run goes on with copies
        # delivered while this run goes on: nothing the run changes later may be shared with it
        answer.update(stages=copy.deepcopy(answer["stages"]), rank=dict(answer["rank"]), timing=dict(answer["timing"]))
        answer["query"]["problems"] = list(answer["query"]["problems"])
        stream.hand_over(answer, later)
        run.timer.lap("partial")
    stream.check(later[0] if later else "fuse")


def _with_snippets(run: SearchRun, shown: list[Hit]) -> list[Hit]:
    """``hits.with_snippets``, each chunk's snippet made once per search (the hand-over's hits come back)."""
    hits.with_snippets(run.conn, [h for h in shown if h.chunk_id not in run.snippets], run.query.words)
    for hit in shown:
        if hit.chunk_id in run.snippets:
            hit.snippet = run.snippets[hit.chunk_id]
        elif hit.chunk_id is not None:
            run.snippets[hit.chunk_id] = hit.snippet
    return shown


def _rows(run: SearchRun, chunk_ids: list[int]) -> dict[int, hits.HitRow]:
    """``hits.load_rows``, each row read once per search (the hand-over, the final fusion, the fill rounds)."""
    missing = [c for c in chunk_ids if c not in run.rows]
    if missing:
        run.rows.update(hits.load_rows(run.conn, missing))
    return {c: run.rows[c] for c in chunk_ids if c in run.rows}


def _report_unmatched_paths(run: SearchRun) -> None:
    """A ``paths`` prefix that names no indexed file or folder filters everything out: say so, or an answer
    with no hits looks like nothing matched the words."""
    for prefix in run.options.paths:
        if not documents.any_at(run.conn, run.ws.id, prefix):
            run.query.problems.append(f"paths: {prefix!r} names no indexed file or folder (paths are relative to "
                                      f"the workspace root, {run.ws.root})")


def _report_unmatched_facets(run: SearchRun) -> None:
    """A facet value no document has (a typo such as "NGINX Pluss") filters everything out: say so, with the
    values the field has, or an answer with no hits looks like nothing matched the words."""
    for facet in run.facets:
        value = str(facet.value)
        if facet.negated or value.startswith(NO_MATCH):  # a value that does not fit is said already
            continue
        twin = folded_twin(value) or value
        if facets.has_value(run.conn, run.ws.id, facet.field, (value, twin)):
            continue
        common = facets.common_values(run.conn, run.ws.id, facet.field, 2 * FACET_VALUES_NAMED)
        named: dict[str, str] = {}
        for known in common:
            named.setdefault(known.casefold(), known)  # a folded twin (zürich beside Zürich) is named once
        values = list(named.values())[:FACET_VALUES_NAMED]
        known = f"; its values here include {', '.join(map(repr, values))}" if values else \
            "; no document has that field"
        run.query.problems.append(f"{facet.field}:{facet.value!r} matches no document{known}")


def _report_ranker(report: StageReport, ranker: Ranker | None) -> None:
    if ranker is None:
        if "rerank" in report.requested:
            report.skipped["rerank"] = "no ranker is configured for this workspace"
    elif "rerank" not in report.requested:
        report.rank.update(state="not_requested", model=ranker.model or None)


def _facet_only(run: SearchRun, ranker: Ranker | None) -> list[Hit]:
    """A query of facets alone lists the documents that have them."""
    listed = hits.document_hits(run.conn, run.ws.id, run.filters.document, run.options.limit)
    run.timer.lap("facet")
    run.report.performed.append("facet")
    for stage in ("lexical", "semantic"):
        if stage in run.options.stages:
            run.report.skipped[stage] = "a facet-only query lists the documents that have the facets"
    if ranker is not None and "rerank" in run.options.stages:
        run.report.rank["state"] = "not_applicable"
        run.report.skipped["rerank"] = "a facet-only query lists files; there is nothing to re-rank"
    run.report.query_info["strategy"] = "facet"
    return listed


def _lexical(run: SearchRun, frequencies: lexical.DocumentFrequencies,
             pool: int) -> tuple[list[int], dict[int, float]]:
    result = _lexical_ranking(run, frequencies, pool)
    run.report.performed.append("lexical")
    run.report.query_info.update(strategy=result.strategy, candidates=len(result.chunk_ids),
                                 common_terms_left_out=result.common_terms_left_out)
    run.timer.lap("lexical")
    return result.chunk_ids, result.scores


def _lexical_ranking(run: SearchRun, frequencies: lexical.DocumentFrequencies, pool: int) -> lexical.LexicalResult:
    return lexical.search(run.conn, run.ws.id, run.query, run.filters, frequencies, pool)


def _symbols(run: SearchRun, lexical_ids: list[int], pool: int) -> list[int]:
    found = _symbol_ranking(run, lexical_ids, pool)
    run.report.performed.append("symbol")
    run.timer.lap("symbol")
    return found


def _symbol_ranking(run: SearchRun, lexical_ids: list[int], pool: int) -> list[int]:
    # Only a pasted identifier has its lexical candidates read for it: in a sentence ("p16INK4A degradation
    # is encoded by CDKN2A") the words around it rank them better.
    read = lexical_ids if run.shape.pasted else []
    return symbols.search(run.conn, run.ws.id, run.shape.tokens, run.filters, pool, read, run.folded)


@dataclass
class SemanticFound:
    chunk_ids: list[int]
    cosines: dict[int, float]
    vector: np.ndarray


def _semantic(run: SearchRun, embedding: Pending[np.ndarray] | None, pool: int) -> SemanticFound | None:
    """The semantic ranking, or None when the stage was skipped (the report says why); a
    semantic-only search that cannot run raises its error."""
    query_vector = semantic_stage.collect(embedding, run.semantic, run.ws.option("semantic_deadline"))
    if embedding is not None:
        run.timer.lap("embed_wait")
        if query_vector.embed_ms is not None:
            run.timer.ms["embed"] = query_vector.embed_ms
    if query_vector.failure is not None:
        reason, code = query_vector.failure
        if "lexical" not in run.options.stages:
            raise AutodocError(code, reason, stage="semantic")
        run.report.skipped["semantic"] = reason
        return None
    found = _semantic_ranking(run, query_vector.vector, pool)
    run.report.performed.append("semantic")
    run.report.query_info.update(semantic_scanned=found.scanned, semantic_shortlist=found.shortlist,
                                 encoder=run.semantic.embedder.encoder_name if run.semantic.embedder else None)
    run.timer.lap("semantic")
    return SemanticFound(found.chunk_ids, found.cosines, query_vector.vector)


def _semantic_ranking(run: SearchRun, vector: np.ndarray, pool: int) -> semantic_stage.SemanticResult:
    return semantic_stage.recall(run.conn, run.ws.id, vector, run.filters, run.semantic.index, pool)


def _blend_cosines(run: SearchRun, found: SemanticFound, lexical_ids: list[int]) -> dict[int, float]:
    """The linear blend scores every candidate on both scales: lexical candidates the semantic
    stage did not return get their exact cosine."""
    missing = [c for c in lexical_ids if c not in found.cosines]
    if not missing or run.ws.option("fusion") != "linear" or run.semantic.index is None:
        return found.cosines
    return {**found.cosines, **run.semantic.index.exact_cosines(found.vector, missing)}


def _fused_hits(run: SearchRun, rankings: dict[str, list[int]], bm25: dict[int, float],
                cosines: dict[int, float]) -> list[Hit]:
    """Fused, boosted hits, at most MAX_PER_DOCUMENT per document, best first."""
    ws = run.ws
    rows = _rows(run, list(dict.fromkeys(c for ids in rankings.values() for c in ids)))
    # Vectors come from memory: drop chunks this snapshot does not have, or that filters exclude (the
    # vector index knows no chunk kinds), before they take part in the blend's scaling.
    rows = {c: row for c, row in rows.items() if run.options.abstract_chunk or row.kind != "abstract"}
    rankings = {name: [c for c in ids if c in rows] for name, ids in rankings.items()}
    linear = ws.option("fusion") == "linear" and "semantic" in rankings
    if linear:
        doc_of = {chunk_id: row.doc_id for chunk_id, row in rows.items()}
        fused = fuse.linear(rankings, bm25, cosines, doc_of, _fusion_weight(run, rankings))
    else:
        fused = fuse.rrf(rankings)
    most_inbound = documents.most_inbound(run.conn, ws.id)
    query = run.query
    words = set(query.words) | {f.value.lower() for f in query.facets if f.field == "tag" and not f.negated}
    fused = fuse.apply_boosts(fused, {f.chunk_id: rows[f.chunk_id].tags for f in fused},
                              {f.chunk_id: rows[f.chunk_id].inbound_links for f in fused}, most_inbound, words)
    fused = fuse.keep_leaders(fused, rankings, cosines if linear else None, one_word=one_word(query),
                              pasted=run.shape.pasted)
    holding = pasted_holders(run, rankings, [f.chunk_id for f in fused])
    if holding is not None:
        run.report.query_info["holding_pasted"] = len(holding)
        fused = fuse.holders_first(fused, holding)
    return hits.cap_per_document([hits.section_hit(rows[f.chunk_id], f.relevance, f.score, f.via) for f in fused])


def _filled(run: SearchRun, ranked: list[Hit], rankings: dict[str, list[int]], bm25: dict[int, float], pool: int,
            frequencies: lexical.DocumentFrequencies, found: SemanticFound | None) -> list[Hit]:
    """Hits up to the limit where the per-document cap left fewer: a few long documents can fill a
    retriever's candidates. When one came back full, the retrievers are asked again for ``FILL_FACTOR`` times
    as many (twice at most), and the sections that adds go below the ranked ones, so the fused order of the
    first hits does not depend on the limit (demotion and re-ranking come after, over the whole list). The
    query info keeps the first round's figures and says what the fill added."""
    info = dict(run.report.query_info)
    before = len(ranked)
    for _ in range(FILL_ROUNDS):
        if len(ranked) >= run.options.limit or not any(len(ids) >= pool for ids in rankings.values()):
            break
        rankings, bm25, found, cosines = _wider_rankings(run, rankings, bm25, found, pool, frequencies)
        pool *= FILL_FACTOR
        shown = {hit.chunk_id for hit in ranked}
        more = [hit for hit in _fused_hits(run, rankings, bm25, cosines) if hit.chunk_id not in shown]
        ranked = hits.cap_per_document(ranked + more)
    run.report.query_info = info
    added = min(len(ranked), run.options.limit) - before
    if added:
        info["filled"] = {"candidates": pool, "added": added}
    return ranked


def _wider_rankings(run: SearchRun, rankings: dict[str, list[int]], bm25: dict[int, float],
                    found: SemanticFound | None, pool: int, frequencies: lexical.DocumentFrequencies,
                    ) -> tuple[dict[str, list[int]], dict[int, float], SemanticFound | None, dict[int, float]]:
    """The same retrievers as ``rankings`` came from (asked for ``pool`` candidates each), each asked for
    ``FILL_FACTOR`` times as many; lexical or semantic, having returned fewer than ``pool``, returned all it
    has and is not asked again (the symbol retriever, reading the lexical list, always is). Returns the
    rankings, the BM25 scores, the semantic candidates and the blend's cosines."""
    wider = dict(rankings)
    if "lexical" in rankings and len(rankings["lexical"]) >= pool:
        result = _lexical_ranking(run, frequencies, pool * FILL_FACTOR)
        wider["lexical"], bm25 = result.chunk_ids, result.scores
    if "symbol" in rankings:
        wider["symbol"] = _symbol_ranking(run, wider.get("lexical", []), pool * FILL_FACTOR)
    cosines: dict[int, float] = {}
    if "semantic" in rankings and found is not None:
        if len(found.chunk_ids) >= pool:
            recalled = _semantic_ranking(run, found.vector, pool * FILL_FACTOR)
            found = SemanticFound(recalled.chunk_ids, recalled.cosines, found.vector)
            wider["semantic"] = found.chunk_ids
        cosines = _blend_cosines(run, found, wider.get("lexical", []))
    return wider, bm25, found, cosines


def pasted_holders(run: SearchRun, rankings: dict[str, list[int]], chunk_ids: list[int]) -> set[int] | None:
    """The candidates whose text holds what was pasted (``fuse.holders_first``): an identifier alone, or a
    query of ``symbols.PHRASE_MIN_WORDS`` or more words word for word (an error or log line), when both
    retrievers took part; None where the rule does not apply (a retriever alone keeps its own order). For a
    phrase only the first lexical candidates are read (``symbols.PHRASE_CANDIDATES``): a chunk holding the
    line holds all of its words."""
    if not ("lexical" in rankings and "semantic" in rankings):
        return None
    if run.shape.literal:
        return symbols.holding(run.conn, run.shape.literal, chunk_ids, run.folded)
    if run.shape.phrase:
        first = rankings["lexical"][: symbols.PHRASE_CANDIDATES]
        return symbols.holding_phrase(run.conn, run.shape.phrase, [c for c in first if c in chunk_ids], run.folded)
    return None


def one_word(query: ParsedQuery) -> bool:
    """The query as typed is one word (``fuse.keep_leaders`` does not check its lexical leader); not its
    terms: BM25 keeps "risks" alone of "what are the risks?"."""
    return len(query.semantic_text.split()) == 1


# (database, workspace id, root) -> (the workspace's generation when counted, its median chunks per document)
_SECTIONS_PER_DOCUMENT: dict[tuple[str, int, str], tuple[int, int]] = {}


def _fusion_weight(run: SearchRun, rankings: dict[str, list[int]]) -> float:
    """The workspace's lexical weight, for ``fuse.linear``; the answer's query info says what the blend used
    (an identifier-shaped query's own weight, see ``fuse.blend_weight``) and where it came from."""
    weight, info = workspace_weight(run)
    info["value"] = fuse.blend_weight(rankings, weight)
    if "symbol" in rankings:
        info["identifier_query"] = True
    run.report.query_info["fusion_weight"] = info
    return weight


def workspace_weight(run: SearchRun) -> tuple[float, dict[str, Any]]:
    """The workspace's ``fusion_weight``, or for "auto" the weight its document shape calls for (the median
    is recounted when the workspace's generation moves), and how it was found."""
    setting = run.ws.option("fusion_weight")
    if setting != "auto":
        return float(setting), {"value": setting, "auto": False}
    key = (run.conn.filename, run.ws.id, run.ws.root)
    generation, median = _SECTIONS_PER_DOCUMENT.get(key, (-1, 0))
    if generation != run.ws.next_generation:
        median = median_sections_per_document(run.conn, run.ws.id)
        _SECTIONS_PER_DOCUMENT[key] = (run.ws.next_generation, median)
    weight = round(fuse.auto_weight(median), 3)
    return weight, {"value": weight, "auto": True, "sections_per_document": median}


def _rerank(run: SearchRun, ranked: list[Hit], ranker: Ranker) -> list[Hit]:
    result = rerank(run.conn, ranked, run.query.semantic_text or run.query.raw, ranker,
                    run.ws.option("rerank_deadline"))
    run.report.rank["model"] = ranker.model or None
    if result.failure:
        run.report.rank.update(state="error", error=result.failure)
        run.report.skipped["rerank"] = f"the ranker failed: {result.failure}; hits keep their fused order"
    else:
        run.report.rank["state"] = "ranked"
        run.report.performed.append("rerank")
    run.timer.lap("rerank")
    return result.hits


def _answer(run: SearchRun, shown: list[Hit], mode_used: str) -> dict[str, Any]:
    info = dict(run.report.query_info)
    query_shape = info.pop("query_shape", symbols.QueryShape("text").as_dict())
    return {
        "hits": [hit.to_dict() for hit in shown],
        "mode_used": mode_used,
        "query_shape": query_shape,
        "semantic": run.semantic.state,
        "rank": run.report.rank,
        "stages": run.report.as_dict(),
        "query": {
            "terms": [t.text for t in run.query.terms],
            "facets": [{"field": f.field, "value": f.value, "negated": f.negated} for f in run.facets],
            "dropped_stopwords": run.query.dropped_stopwords,
            "problems": run.query.problems,
            "terms_left_out": run.query.terms_left_out,
            **info,
        },
        "timing": run.timer.done(),
    }
