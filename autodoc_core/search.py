"""The search pipeline: parse the query, run the requested stages, fuse, shape, and say what ran.

Every answer reports ``stages`` (requested, performed, skipped with a reason) and ``timing``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import apsw
import numpy as np

from . import fuse, lexical, shape, symbols
from .embedders import Embedder
from .embedding import OFF, SWITCHING
from .errors import EMBED_FAILED, UNSUPPORTED, AutodocError, invalid_params
from .errors import SWITCHING as SWITCHING_CODE
from .frontmatter import CoercionError, FacetSchema, coerce
from .http import ProviderError
from .providers import Pending, within_deadline
from .query import BUILTIN_FACETS, FacetFilter, ParsedQuery, parse_query
from .rank import Ranker
from .semantic import CANDIDATES, VectorIndex
from .workspace import Workspace

STAGES = ("lexical", "semantic", "rerank")
MODES = {"lexical": ["lexical"], "semantic": ["semantic"], "hybrid": list(STAGES), "auto": list(STAGES)}
DEFAULT_LIMIT = 10
MAX_LIMIT = 200
OPTION_KEYS = {"limit", "paths", "tags", "facets", "retrieval", "stages", "mode"}
RETRIEVAL_KEYS = {"abstract_chunk", "demote_superseded", "symbol"}


@dataclass
class SearchOptions:
    limit: int
    paths: list[str]
    facets: list[FacetFilter]
    abstract_chunk: bool
    demote_superseded: bool
    stages: list[str]
    symbol: bool = True


def parse_options(opts: Any, ws: Workspace, schema: FacetSchema) -> SearchOptions:
    if opts is None:
        opts = {}
    if not isinstance(opts, dict):
        raise invalid_params("search options must be an object")
    unknown = sorted(set(opts) - OPTION_KEYS)
    if unknown:
        raise invalid_params(f"unknown search option {', '.join(unknown)}; known: {', '.join(sorted(OPTION_KEYS))}")
    limit = opts.get("limit", DEFAULT_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise invalid_params(f"'limit' must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
    retrieval = opts.get("retrieval") or {}
    if not isinstance(retrieval, dict) or set(retrieval) - RETRIEVAL_KEYS:
        raise invalid_params(f"'retrieval' takes {', '.join(sorted(RETRIEVAL_KEYS))}")
    for key, value in retrieval.items():
        if not isinstance(value, bool):
            raise invalid_params(f"'retrieval.{key}' must be true or false")
    return SearchOptions(
        limit=limit,
        paths=_paths(opts.get("paths")),
        facets=_option_facets(opts.get("facets"), opts.get("tags"), schema),
        abstract_chunk=retrieval.get("abstract_chunk", ws.option("abstract_chunk")),
        demote_superseded=retrieval.get("demote_superseded", ws.option("demote_superseded")),
        stages=_stages(opts.get("stages"), opts.get("mode")),
        symbol=retrieval.get("symbol", True),
    )


def _paths(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise invalid_params("'paths' must be a list of folder prefixes")
    return [p.strip("/").replace("\\", "/") for p in value if p.strip("/")]


def _option_facets(facets: Any, tags: Any, schema: FacetSchema) -> list[FacetFilter]:
    result: list[FacetFilter] = []
    if tags is not None:
        if isinstance(tags, str):
            tags = [tags]
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise invalid_params("'tags' must be a list of tag names")
        result.extend(FacetFilter("tag", t.lstrip("#").lower()) for t in tags)
    if facets is None:
        return result
    if not isinstance(facets, dict):
        raise invalid_params("'facets' must be an object of field: value")
    for name, value in facets.items():
        kind = BUILTIN_FACETS.get(name) or schema.declared(name)
        if kind is None:
            declared = sorted(set(schema.common) | {f for t in schema.types.values() for f in t})
            raise invalid_params(
                f"facet field {name!r} is not declared in _schema/frontmatter.yaml "
                f"(declared: {', '.join(declared) or 'none'})",
                field=name,
            )
        for item in value if isinstance(value, list) else [value]:
            try:
                coerced = coerce(item, kind) if kind != "list" else [str(item)]
            except CoercionError as exc:
                raise invalid_params(f"facet {name}: {exc}", field=name) from None
            result.append(FacetFilter("tag" if name in BUILTIN_FACETS else name, coerced[0]))
    return result


def _stages(stages: Any, mode: Any) -> list[str]:
    if stages is None:
        if mode is None:
            return list(STAGES)
        if mode not in MODES:
            raise invalid_params(f"'mode' must be one of {', '.join(MODES)}, got {mode!r}")
        return list(MODES[mode])
    if not isinstance(stages, list) or not all(s in STAGES for s in stages):
        raise invalid_params(f"'stages' must be a list drawn from {', '.join(STAGES)}, got {stages!r}")
    if not stages:
        return list(STAGES)
    if "lexical" not in stages and "semantic" not in stages:
        raise invalid_params("'stages' must include lexical or semantic (rerank only reorders their hits)")
    return [s for s in STAGES if s in stages]


def build_filters(facets: list[FacetFilter], paths: list[str], abstract_chunk: bool, ws_id: int) -> lexical.Filters:
    filters = lexical.Filters()
    by_field: dict[tuple[str, bool], list[str]] = {}
    for facet in facets:
        by_field.setdefault((facet.field, facet.negated), []).append(facet.value)
    for (name, negated), values in by_field.items():
        marks = ", ".join("?" * len(values))
        clause = f"d.id {'NOT ' if negated else ''}IN (SELECT doc_id FROM facets WHERE ws_id = ? AND field = ? " \
                 f"AND value IN ({marks}))"
        filters.clauses.append(clause)
        filters.params.extend([ws_id, name, *values])
    if paths:
        filters.clauses.append("(" + " OR ".join("d.path = ? OR substr(d.path, 1, ?) = ?" for _ in paths) + ")")
        for prefix in paths:
            filters.params.extend([prefix, len(prefix) + 1, prefix + "/"])
    if not abstract_chunk:
        filters.clauses.append("c.kind <> 'abstract'")
    return filters


def allowed_documents(conn: apsw.Connection, ws_id: int, filters: lexical.Filters) -> np.ndarray | None:
    """Document ids passing the document-level filters, or None when nothing filters."""
    clauses = [c for c in filters.clauses if not c.startswith("c.")]
    if not clauses:
        return None
    sql = "SELECT d.id FROM documents d WHERE d.ws_id = ?" + "".join(f" AND {c}" for c in clauses)
    return np.array([r[0] for r in conn.execute(sql, (ws_id, *filters.params))], dtype=np.int64)


_HIT_SQL = """
SELECT c.id, c.doc_id, d.path, c.breadcrumb, c.byte_start, c.byte_end, c.line_start, c.line_end,
       d.generation, d.tags, d.inbound_links, d.successor_id, d.status, d.title, c.kind,
       (SELECT path FROM documents s WHERE s.id = d.successor_id)
FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({marks})
"""


def _load_rows(conn: apsw.Connection, chunk_ids: list[int]) -> dict[int, tuple]:
    rows: dict[int, tuple] = {}
    for start in range(0, len(chunk_ids), 500):
        part = chunk_ids[start : start + 500]
        for row in conn.execute(_HIT_SQL.format(marks=", ".join("?" * len(part))), part):
            rows[row[0]] = row
    return rows


class Timer:
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
class SemanticSource:
    """What the engine knows about a workspace's semantic stage at query time."""

    state: str
    embedder: Embedder | None = None
    index: VectorIndex | None = None
    progress: tuple[int, int] = (0, 0)  # chunk texts embedded, total
    unavailable: str | None = None  # why a configured model cannot be used


def run_search(conn: apsw.Connection, ws: Workspace, schema: FacetSchema, text: Any, opts: Any,
               frequencies: lexical.DocumentFrequencies, semantic: SemanticSource,
               ranker: Ranker | None = None) -> dict[str, Any]:
    timer = Timer()
    if not isinstance(text, str):
        raise invalid_params(f"query must be a string, got {type(text).__name__}")
    options = parse_options(opts, ws, schema)
    query = parse_query(text, schema)
    facets = query.facets + options.facets
    filters = build_filters(facets, options.paths, options.abstract_chunk, ws.id)
    timer.lap("parse")

    performed: list[str] = []
    skipped: dict[str, str] = {}
    rank = {"state": "off", "model": None, "error": None}
    if ranker is None:
        if "rerank" in options.stages:
            skipped["rerank"] = "no ranker is configured for this workspace"
    elif "rerank" not in options.stages:
        rank.update(state="not_requested", model=ranker.model or None)
    info: dict[str, Any] = {}
    if not query.terms and facets:
        hits = _facet_only(conn, ws, filters, options.limit)
        timer.lap("facet")
        if ranker is not None and "rerank" in options.stages:
            rank["state"] = "not_applicable"
            skipped["rerank"] = "a facet-only query lists files; there is nothing to re-rank"
        return _answer(hits, "facet", semantic, options, performed, skipped, query, facets,
                       {"strategy": "facet"}, timer, rank)

    rankings: dict[str, list[int]] = {}
    lexical_scores: dict[int, float] = {}
    embedding = _start_query_embedding(query, semantic) if "semantic" in options.stages else None
    if "lexical" in options.stages:
        result = lexical.search(conn, ws.id, query, filters, frequencies, max(lexical.CANDIDATES, options.limit))
        rankings["lexical"] = result.chunk_ids
        lexical_scores = result.scores
        performed.append("lexical")
        info.update(strategy=result.strategy, candidates=len(result.chunk_ids),
                    common_terms_left_out=result.common_terms_left_out)
        timer.lap("lexical")
    shape_of_query = symbols.classify(query.semantic_text)
    if shape_of_query.shape == "identifier" and options.symbol:
        rankings["symbol"] = symbols.search(conn, ws.id, shape_of_query.tokens, filters.sql(),
                                            tuple(filters.params), max(symbols.CANDIDATES, options.limit))
        performed.append("symbol")
        timer.lap("symbol")
    info["query_shape"] = shape_of_query.as_dict()
    query_vector = None
    if "semantic" in options.stages:
        query_vector = _semantic(conn, ws, embedding, filters, semantic, options, rankings, performed, skipped,
                                 info, timer)
    cosines: dict[int, float] = {}
    if query_vector is not None and semantic.index is not None:
        cosines = info.pop("_cosines")
        missing = [c for c in rankings.get("lexical", []) if c not in cosines]
        if missing and ws.option("fusion") == "linear":
            cosines.update(semantic.index.exact_cosines(query_vector, missing))
    candidates = _fuse(conn, ws, rankings, lexical_scores, cosines, query, options)
    timer.lap("fuse")
    if ranker is not None and "rerank" in options.stages:
        candidates, failure = _rerank(conn, candidates, query, ranker, ws.option("rerank_deadline"))
        rank["model"] = ranker.model or None
        if failure:
            rank.update(state="error", error=failure)
            skipped["rerank"] = f"the ranker failed: {failure}; hits keep their fused order"
        else:
            rank["state"] = "ranked"
            performed.append("rerank")
        timer.lap("rerank")
    hits = _finish(conn, candidates, query, options)
    timer.lap("shape")
    retrievers = [p for p in performed if p in ("lexical", "semantic")]
    mode_used = "hybrid" if len(retrievers) > 1 else (retrievers[0] if retrievers else "none")
    return _answer(hits, mode_used, semantic, options, performed, skipped, query, facets, info, timer, rank)


def _semantic_unavailable(semantic: SemanticSource) -> tuple[str, int] | None:
    """Why the semantic stage cannot run, with the error code a semantic-only request gets."""
    if semantic.unavailable:
        return semantic.unavailable, UNSUPPORTED
    if semantic.state == OFF or semantic.embedder is None:
        return "no embedding model is configured for this workspace", UNSUPPORTED
    if semantic.state == SWITCHING:
        return "a new embedding model is filling", SWITCHING_CODE
    if semantic.index is None or len(semantic.index) == 0:
        embedded, total = semantic.progress
        return f"no document is fully embedded yet ({embedded} of {total} chunk texts have vectors)", UNSUPPORTED
    return None


def _start_query_embedding(query: ParsedQuery, semantic: SemanticSource) -> Pending | None:
    """Embed the query in its own thread, so it runs while the lexical stage reads SQLite (both
    release the GIL in their inner loops); None when the stage cannot run."""
    if _semantic_unavailable(semantic) is not None:
        return None
    embedder = semantic.embedder
    text = query.semantic_text or query.raw or " "
    return Pending(lambda: embedder.embed([text], "query")[0], name="autodoc-query-embedding")


def _semantic(conn, ws, embedding: Pending | None, filters, semantic: SemanticSource, options, rankings,
              performed, skipped, info, timer) -> np.ndarray | None:
    # The embedding was started only if the stage could run: ask why not only when it was not.
    failure = _semantic_unavailable(semantic) if embedding is None else None
    if embedding is not None:
        deadline = ws.option("semantic_deadline") if semantic.embedder.remote else None
        try:
            vector = embedding.result(deadline, "the embedding provider")
        except ProviderError as exc:
            failure = f"embedding the query failed: {exc.reason}", EMBED_FAILED
        timer.lap("embed_wait")
        if failure is None:
            timer.ms["embed"] = round(embedding.seconds * 1000, 3)
    if failure is not None:
        reason, code = failure
        if "lexical" not in options.stages:
            raise AutodocError(code, reason, stage="semantic")
        skipped["semantic"] = reason
        return None
    recall = semantic.index.search(vector, allowed_documents(conn, ws.id, filters), max(CANDIDATES, options.limit))
    rankings["semantic"] = recall.chunk_ids
    performed.append("semantic")
    info.update(semantic_scanned=recall.scanned, semantic_shortlist=recall.shortlist, _cosines=recall.cosines)
    timer.lap("semantic")
    return vector


def _answer(hits, mode_used, semantic: SemanticSource, options, performed, skipped, query, facets, info,
            timer, rank) -> dict[str, Any]:
    return {
        "hits": hits,
        "mode_used": mode_used,
        "query_shape": info.pop("query_shape", {"shape": "text", "kinds": [], "identifiers": []}),
        "semantic": semantic.state,
        "rank": rank,
        "stages": {"requested": options.stages, "performed": performed, "skipped": skipped},
        "query": {
            "terms": [t.text for t in query.terms],
            "facets": [{"field": f.field, "value": f.value, "negated": f.negated} for f in facets],
            "dropped_stopwords": query.dropped_stopwords,
            "problems": query.problems,
            **info,
        },
        "timing": timer.done(),
    }


def _fuse(conn: apsw.Connection, ws: Workspace, rankings: dict[str, list[int]],
          lexical_scores: dict[int, float], cosines: dict[int, float], query: ParsedQuery,
          options: SearchOptions) -> list[shape.Candidate]:
    """Fused, boosted candidates, at most MAX_PER_DOCUMENT per document, best first."""
    ws_id = ws.id
    rows = _load_rows(conn, list(dict.fromkeys(c for ids in rankings.values() for c in ids)))
    if ws.option("fusion") == "linear" and "semantic" in rankings:
        doc_of = {chunk_id: row[1] for chunk_id, row in rows.items()}
        fused = fuse.linear(rankings, lexical_scores, cosines, doc_of, ws.option("fusion_weight"))
    else:
        fused = fuse.rrf(rankings)
    # Vectors come from memory: drop chunks this snapshot does not have, or that filters exclude.
    fused = [f for f in fused if f.chunk_id in rows and (options.abstract_chunk or rows[f.chunk_id][14] != "abstract")]
    most_inbound = conn.execute(
        "SELECT COALESCE(MAX(inbound_links), 0) FROM documents WHERE ws_id = ?", (ws_id,)
    ).fetchone()[0]
    words = set(query.words) | {f.value.lower() for f in query.facets if f.field == "tag" and not f.negated}
    fused = fuse.apply_boosts(
        fused,
        {f.chunk_id: json.loads(rows[f.chunk_id][9]) for f in fused},
        {f.chunk_id: rows[f.chunk_id][10] for f in fused},
        most_inbound,
        words,
    )
    fused = fuse.keep_leaders(fused, {name: ids for name, ids in rankings.items() if ids})
    candidates = [_candidate(rows[f.chunk_id], f) for f in fused]
    return shape.cap_per_document(candidates)


def _rerank(conn: apsw.Connection, candidates: list[shape.Candidate], query: ParsedQuery,
            ranker: Ranker, deadline: float) -> tuple[list[shape.Candidate], str | None]:
    """Re-sort the top ``window`` candidates by the ranker's scores; the rest keep their order after them.
    Returns the candidates and, when the ranker failed, why (the fused order is kept)."""
    window = candidates[: ranker.window]
    if not window:
        return candidates, None
    bodies = _bodies(conn, [c.hit["chunk_id"] for c in window])
    texts = [f"{c.hit['breadcrumb']}\n{bodies.get(c.hit['chunk_id'], '')}".strip() for c in window]
    try:
        scores = within_deadline(lambda: ranker.scores(query.semantic_text or query.raw, texts), deadline,
                                 "the ranker")
    except ProviderError as exc:
        return candidates, exc.reason
    for candidate, score in zip(window, scores, strict=True):
        candidate.hit["rank_score"] = round(score, 6)
        candidate.hit["via"].append("rank")
    ranked = sorted(window, key=lambda c: -c.hit["rank_score"])
    return ranked + candidates[ranker.window :], None


def _finish(conn: apsw.Connection, candidates: list[shape.Candidate], query: ParsedQuery,
            options: SearchOptions) -> list[dict[str, Any]]:
    if options.demote_superseded:
        candidates = shape.demote_superseded(candidates)
    hits = [c.hit for c in candidates[: options.limit]]
    words = query.words
    bodies = _bodies(conn, [hit["chunk_id"] for hit in hits])
    for hit in hits:
        hit["snippet"] = shape.snippet(bodies.get(hit["chunk_id"]) or hit["breadcrumb"], words)
    return hits


def _bodies(conn: apsw.Connection, chunk_ids: list[int]) -> dict[int, str]:
    marks = ", ".join("?" * len(chunk_ids))
    return dict(conn.execute(f"SELECT id, body FROM chunks WHERE id IN ({marks})", chunk_ids)) if chunk_ids else {}


def _candidate(row: tuple, fused: fuse.Fused) -> shape.Candidate:
    (chunk_id, doc_id, path, breadcrumb, byte_start, byte_end, line_start, line_end, generation,
     _tags, _inbound, successor_id, status, title, kind, successor_path) = row
    superseded = status == "superseded" or successor_id is not None
    hit = {
        "path": path,
        "title": title,
        "breadcrumb": breadcrumb,
        "kind": kind,
        "snippet": "",
        "byte_start": byte_start,
        "byte_end": byte_end,
        "line_start": line_start,
        "line_end": line_end,
        "relevance": round(fused.relevance, 4),
        "score": round(fused.score, 6),
        "via": list(fused.via),
        "rank_score": None,
        "generation": generation,
        "superseded": superseded,
        "superseded_by": successor_path,
        "chunk_id": chunk_id,
    }
    return shape.Candidate(hit, doc_id, successor_id, superseded)


def _facet_only(conn: apsw.Connection, ws: Workspace, filters: lexical.Filters, limit: int) -> list[dict[str, Any]]:
    sql = (
        "SELECT d.path, d.title, d.generation, d.line_count, d.size, d.status, d.successor_id, "
        "(SELECT path FROM documents s WHERE s.id = d.successor_id) "
        "FROM documents d WHERE d.ws_id = ?"
        + "".join(f" AND {c}" for c in filters.clauses if not c.startswith("c."))
        + " ORDER BY d.path LIMIT ?"
    )
    params = [ws.id, *filters.params, limit]
    hits = []
    for path, title, generation, line_count, size, status, successor_id, successor_path in conn.execute(
        sql, params
    ):
        hits.append({
            "path": path, "title": title, "breadcrumb": title, "kind": "document", "snippet": "",
            "byte_start": 0, "byte_end": size, "line_start": 1, "line_end": line_count,
            "relevance": 1.0, "score": 1.0, "via": ["facet"], "rank_score": None, "generation": generation,
            "superseded": status == "superseded" or successor_id is not None, "superseded_by": successor_path,
        })
    return hits
