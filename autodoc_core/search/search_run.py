"""What one search works with (``SearchRun``), the stages every search and related search share (the
ranker's note, the facet-only listing, re-ranking), and its answer from its stages' notes (``answer_of``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import apsw

from autodoc_core.parse.frontmatter import folded_twin
from autodoc_core.providers.rankers import Ranker
from autodoc_core.rank import hits
from autodoc_core.rank.hits import Hit
from autodoc_core.rank.rerank import rerank
from autodoc_core.retrieve import symbols
from autodoc_core.retrieve.options import SearchOptions
from autodoc_core.retrieve.query import NO_MATCH, FacetFilter, ParsedQuery
from autodoc_core.retrieve.semantic_stage import SemanticSource
from autodoc_core.search.answer import (
    NOTHING_TO_SAY,
    RankState,
    SearchAnswer,
    StageNote,
    Timer,
    problems_of,
    report_of,
)
from autodoc_core.search.caches import SearchCaches
from autodoc_core.search.stages import Stage
from autodoc_core.store import documents, facets
from autodoc_core.store.filters import Filters
from autodoc_core.store.workspace import Workspace

FACET_VALUES_NAMED = 6  # a facet value no document has: the field's most common values, named in the problem


@dataclass(frozen=True)
class SearchRun:
    """Everything one search works with, parsed and checked. Its stages read it and return what they found
    with a ``StageNote``; none writes it. ``folded``, ``rows`` and ``snippets`` keep what the search read
    once, so that it is not read again."""

    conn: apsw.Connection
    ws: Workspace
    query: ParsedQuery
    options: SearchOptions
    facets: list[FacetFilter]
    filters: Filters
    semantic: SemanticSource
    caches: SearchCaches = field(default_factory=SearchCaches)  # the engine's; a fresh one remembers nothing
    shape: symbols.QueryShape = field(default_factory=lambda: symbols.QueryShape("text"))
    several: bool = False  # one of a search of several workspaces (search.scope)
    folded: dict[int, tuple[str, str]] = field(default_factory=dict)  # chunk texts the symbol rules have read
    rows: dict[int, hits.HitRow] = field(default_factory=dict)  # read once, for the hand-over and the final answer
    snippets: dict[int, str] = field(default_factory=dict)  # by chunk id, likewise


def answer_of(run: SearchRun, notes: list[StageNote], shown: list[Hit], timer: Timer,
              mode_used: str | None = None) -> SearchAnswer:
    """The answer the stages' ``notes`` make, with the ``shown`` hits (``mode_used``: by default what the
    stages performed says)."""
    report = report_of(run.options.stages, notes)
    problems = problems_of(notes)
    query = dataclasses.replace(run.query, problems=run.query.problems + problems) if problems else run.query
    return SearchAnswer.of(report, query, run.facets, shown, mode_used or report.mode_used, run.semantic.state,
                           timer.done())


def with_snippets(run: SearchRun, shown: list[Hit]) -> list[Hit]:
    """``hits.with_snippets``, each chunk's snippet made once per search (the hand-over's hits come back);
    the hits as they are when the search asked for none."""
    if not run.options.snippets:
        return shown
    hits.with_snippets(run.conn, [h for h in shown if h.chunk_id not in run.snippets], run.query.words)
    for hit in shown:
        if hit.chunk_id in run.snippets:
            hit.snippet = run.snippets[hit.chunk_id]
        elif hit.chunk_id is not None:
            run.snippets[hit.chunk_id] = hit.snippet
    return shown


def rows_of(run: SearchRun, chunk_ids: list[int]) -> dict[int, hits.HitRow]:
    """``hits.load_rows``, each row read once per search (the hand-over, the final fusion, the fill rounds)."""
    missing = [c for c in chunk_ids if c not in run.rows]
    if missing:
        run.rows.update(hits.load_rows(run.conn, missing))
    return {c: run.rows[c] for c in chunk_ids if c in run.rows}


def unmatched_paths(run: SearchRun) -> StageNote:
    """A ``paths`` prefix that names no indexed file or folder filters everything out: say so, or an answer
    with no hits looks like nothing matched the words."""
    return StageNote(problems=tuple(
        f"paths: {prefix!r} names no indexed file or folder (paths are relative to the workspace root, "
        f"{run.ws.root})" for prefix in run.options.paths if not documents.any_at(run.conn, run.ws.id, prefix)))


def unmatched_facets(run: SearchRun) -> StageNote:
    """A facet value no document has (a typo such as "NGINX Pluss") filters everything out: say so, with the
    values the field has, or an answer with no hits looks like nothing matched the words."""
    problems = []
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
        problems.append(f"{facet.field}:{facet.value!r} matches no document{known}")
    return StageNote(problems=tuple(problems))


def ranker_note(requested: list[Stage], ranker: Ranker | None) -> StageNote:
    """The re-ranking asked for with no ranker, or a ranker not asked for."""
    if ranker is None:
        if Stage.RERANK in requested:
            return StageNote.skip(Stage.RERANK, "no ranker is configured for this workspace")
        return NOTHING_TO_SAY
    if Stage.RERANK not in requested:
        return StageNote(rank=RankState("not_requested", ranker.model or None))
    return NOTHING_TO_SAY


def facet_only(run: SearchRun, ranker: Ranker | None) -> tuple[list[Hit], StageNote]:
    """A query of facets alone lists the documents that have them."""
    listed = hits.document_hits(run.conn, run.ws.id, run.filters.document, run.options.limit)
    if run.options.demote_superseded:
        listed = hits.demote_superseded(listed)
    why = "a facet-only query lists the documents that have the facets"
    skipped = [(stage, why) for stage in (Stage.LEXICAL, Stage.SEMANTIC) if stage in run.options.stages]
    rank = None
    if ranker is not None and Stage.RERANK in run.options.stages:
        rank = RankState("not_applicable")
        skipped.append((Stage.RERANK, "a facet-only query lists files; there is nothing to re-rank"))
    return listed, StageNote(Stage.FACET, tuple(skipped), {"strategy": "facet"}, rank)


def rerank_hits(run: SearchRun, ranked: list[Hit], ranker: Ranker) -> tuple[list[Hit], StageNote]:
    result = rerank(run.conn, ranked, run.query.semantic_text or run.query.raw, ranker,
                    run.ws.option("rerank_deadline"))
    model = ranker.model or None
    if result.failure:
        return result.hits, StageNote(skipped=((Stage.RERANK, f"the ranker failed: {result.failure}; hits keep "
                                                              "their fused order"),),
                                      rank=RankState("error", model, result.failure))
    return result.hits, StageNote(Stage.RERANK, rank=RankState("ranked", model))
