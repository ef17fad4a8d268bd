"""Related sections: what else the knowledge base says about a section, or about a document as a whole.

    locate the source -> semantic (its stored vector) -> lexical (its most distinctive words) -> link (the
    link graph, both ways) -> fuse (rank/fuse.py, as search.query fuses) -> rerank -> demote -> shape

Hits are sections of other documents, at most three per document, in ``search.query``'s answer. The
semantic stage needs no embedding: a section is searched with the vector stored for it, a document as a
whole with the mean of its sections' vectors (``document_vector``). A source with no vector yet (the
workspace is still filling, or has no embedder) is answered by its links and words, and ``stages.skipped``
says why.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from dataclasses import dataclass
from typing import Any, cast

import apsw
import numpy as np

from autodoc_core.errors import NOT_FOUND, AutodocError, invalid_params
from autodoc_core.parse.frontmatter import FacetSchema
from autodoc_core.parse.walk import resolve_inside
from autodoc_core.providers.rankers import Ranker
from autodoc_core.rank import fuse, hits
from autodoc_core.rank.hits import Hit
from autodoc_core.related import word_search as related_lexical
from autodoc_core.retrieve import lexical, semantic_stage
from autodoc_core.retrieve.filters import build_filters
from autodoc_core.retrieve.linked import linked_documents
from autodoc_core.retrieve.options import parse_options
from autodoc_core.retrieve.query import ParsedQuery, Term, fts_tokens
from autodoc_core.retrieve.semantic_stage import SemanticSource
from autodoc_core.search.answer import FusionWeight, SearchAnswer, StageNote, Timer
from autodoc_core.search.caches import SearchCaches
from autodoc_core.search.search_run import (
    SearchRun,
    answer_of,
    ranker_note,
    rerank_hits,
    unmatched_facets,
    unmatched_paths,
)
from autodoc_core.search.stages import Candidates, Stage
from autodoc_core.store import chunks, documents
from autodoc_core.store import workspace as workspaces
from autodoc_core.store.chunks import Section
from autodoc_core.store.workspace import Workspace

# The blend's lexical weight for related sections, chosen on the KEPs' citation pairs (tests/bench/related.py,
# doc/benchmarks/related.md); a search's own weight (fusion_weight) is tuned for typed queries, not for a
# section's words.
RELATED_LEXICAL_WEIGHT = 0.4
# What a link adds to a section's fused score (the blend is 0..2 with its document's share). Not tuned: the
# benchmark's pairs are citations, which are links, so they are removed there. An author's own link says the
# documents are related, so a linked document's best section comes among the first hits, not always first.
LINK_WEIGHT = 0.5
# "mean": a whole document's vector is the normalised mean of its sections' vectors; "first": its first
# section's. Chosen on the KEPs' citation pairs (doc/benchmarks/related.md).
DOCUMENT_VECTOR = "mean"
# A whole document's words count when written at least this often (a section's, once). Chosen on the KEPs.
DOCUMENT_LEAST_FREQUENCY = 2
RELATED_CANDIDATES = lexical.CANDIDATES  # each retriever's candidates, at least
SOURCE_EXCERPT_CHARS = 2000  # what the ranker reads of the source section, as its query
SNIPPET_WORDS = 8  # a snippet centres on the first of the most distinctive words it finds


@dataclass
class Source:
    """The document asked about, and the section holding the line (None: the document as a whole)."""

    doc_id: int
    path: str
    line_count: int
    tags: tuple[str, ...]
    sections: list[Section]
    section: Section | None

    @property
    def chosen(self) -> list[Section]:
        return [self.section] if self.section is not None else self.sections

    @property
    def text(self) -> str:
        return "\n".join(f"{s.breadcrumb}\n{s.body}" for s in self.chosen)


def run_related(conn: apsw.Connection, ws: Workspace, schema: FacetSchema, path: Any, opts: Any,
                frequencies: lexical.DocumentFrequencies, semantic: SemanticSource,
                ranker: Ranker | None = None, caches: SearchCaches | None = None,
                several: bool = False) -> SearchAnswer:
    """``several``: one of a related search of several workspaces (its hits' match is measured for the merge)."""
    line, search_opts = _split_options(opts)
    source = locate(conn, ws, path, line)
    return _related(conn, ws, schema, source, search_opts, frequencies, semantic, ranker, caches, Elsewhere(),
                    several)


@dataclass(frozen=True)
class Elsewhere:
    """A source in another workspace than the one searched (a related search of several workspaces): its name,
    and its vector when the two embed with the same model (None: the semantic stage is skipped, ``why_not``
    says why). The default is a source in the workspace searched."""

    workspace: str | None = None
    vector: np.ndarray | None = None
    model: str | None = None  # the source workspace's model fingerprint
    why_not: str | None = None


def run_related_elsewhere(conn: apsw.Connection, ws: Workspace, schema: FacetSchema, source: Source,
                          elsewhere: Elsewhere, opts: Any, frequencies: lexical.DocumentFrequencies,
                          semantic: SemanticSource, ranker: Ranker | None = None,
                          caches: SearchCaches | None = None) -> SearchAnswer:
    """Sections of ``ws`` related to ``source``, located in workspace ``elsewhere.workspace``: by its vector and by
    its words most distinctive in ``ws``; links stay within a workspace."""
    _, search_opts = _split_options(opts)
    return _related(conn, ws, schema, source, search_opts, frequencies, semantic, ranker, caches, elsewhere, True)


def _related(conn: apsw.Connection, ws: Workspace, schema: FacetSchema, source: Source, search_opts: dict[str, Any],
             frequencies: lexical.DocumentFrequencies, semantic: SemanticSource, ranker: Ranker | None,
             caches: SearchCaches | None, elsewhere: Elsewhere, several: bool) -> SearchAnswer:
    timer = Timer()
    options = parse_options(search_opts, ws, schema)
    filters = build_filters(options.facets, options.paths, options.abstract_chunk, ws.id)
    query = ParsedQuery(raw="", semantic_text=source.text[:SOURCE_EXCERPT_CHARS], any_word=True)
    run = SearchRun(conn, ws, query, options, options.facets, filters, semantic, caches or SearchCaches(),
                    several=several)
    notes = [unmatched_paths(run), unmatched_facets(run), ranker_note(options.stages, ranker)]
    timer.lap("locate")
    about = _about(source)
    nothing = _nothing_to_relate(conn, ws, source) if elsewhere.workspace is None else _nothing_in(source)
    if nothing:
        about["note"] = nothing
        notes.append(StageNote(problems=(nothing,)))
        return dataclasses.replace(answer_of(run, notes, [], timer, "none"), related=about)
    run, found = _retrieve(run, source, frequencies, about, elsewhere, notes, timer)
    candidates, note = _fused(run, source, found)
    notes.append(note)
    timer.lap("fuse")
    if ranker is not None and Stage.RERANK in options.stages:
        ranked, note = rerank_hits(run, _hits(run, candidates), ranker)
        notes.append(note)
        timer.lap("rerank")
        ranked = hits.demote_superseded(ranked) if options.demote_superseded else ranked
    else:
        ranked = _shown(run, candidates)
    shown = ranked[: options.limit]
    if options.snippets:
        hits.with_snippets(conn, shown, _snippet_words(run.query))
    timer.lap("shape")
    return dataclasses.replace(answer_of(run, notes, shown, timer), related=about)


def _snippet_words(query: ParsedQuery) -> list[str]:
    """The first ``SNIPPET_WORDS`` words of the most distinctive (``query.words`` splits all of them)."""
    words: list[str] = []
    for term in query.terms:
        words.extend(fts_tokens(term.text))
        if len(words) >= SNIPPET_WORDS:
            break
    return words[:SNIPPET_WORDS]


@dataclass
class Found:
    """Each retriever's candidates in order, the lexical ones' BM25, and every candidate's cosine it has
    (the semantic candidates' scores, once ``_retrieve`` is done)."""

    rankings: dict[Stage, list[int]]
    bm25: dict[int, float]
    cosines: dict[int, float]

    def candidates(self) -> dict[Stage, Candidates]:
        scores = {Stage.LEXICAL: self.bm25, Stage.SEMANTIC: self.cosines}
        return {stage: Candidates(ids, scores.get(stage, {})) for stage, ids in self.rankings.items()}


def _retrieve(run: SearchRun, source: Source, frequencies: lexical.DocumentFrequencies, about: dict[str, Any],
              elsewhere: Elsewhere, notes: list[StageNote], timer: Timer) -> tuple[SearchRun, Found]:
    """Semantic (the source's stored vector), lexical (its distinctive words) and link candidates, each stage's
    note added to ``notes``; and the run with the query those words make."""
    pool = max(RELATED_CANDIDATES, run.options.limit)
    found = Found({}, {}, {})
    vector = None
    if Stage.SEMANTIC in run.options.stages:
        vector, note = _source_vector(run, source) if elsewhere.workspace is None else _vector_from(run, elsewhere)
        notes.append(note)
    if vector is not None:
        found.rankings[Stage.SEMANTIC], found.cosines, note = _semantic(run, source, vector, pool)
        notes.append(note)
        timer.lap("semantic")
        about["vector"] = "section" if source.section is not None else f"document ({DOCUMENT_VECTOR} of its sections)"
    least = 1 if source.section is not None else DOCUMENT_LEAST_FREQUENCY
    foreign = elsewhere.workspace is not None
    terms = [Term(w.word) for w in related_lexical.words(run, source, frequencies, least, foreign)]
    # Here, only the source's words some section holds are searched; what they could score is measured against
    # the words its own workspace chose too, each one missing here at its full weight: a workspace of Chinese
    # notes holding three English words of the source matched them as well as the source's own workspace did.
    measured = _source_own_words(run, source, frequencies, least, elsewhere) \
        if foreign and Stage.LEXICAL in run.options.stages else []
    timer.lap("words")
    run = dataclasses.replace(run, query=dataclasses.replace(run.query, terms=terms,
                                                             raw=" ".join(t.text for t in terms)))
    if Stage.LEXICAL in run.options.stages:
        found.rankings[Stage.LEXICAL], found.bm25, note = related_lexical.search_words(run, source, frequencies,
                                                                                       pool, measured)
        notes.append(note)
        timer.lap("lexical")
    lexical_ids = found.rankings.get(Stage.LEXICAL, [])
    link_cosines: dict[int, float] = {}
    found.rankings[Stage.LINK] = []
    if elsewhere.workspace is None:  # links stay within a workspace
        found.rankings[Stage.LINK], link_cosines = _links(run, source, vector, lexical_ids)
        notes.append(StageNote.ran(Stage.LINK))
        timer.lap("link")
    found.cosines.update(link_cosines)
    if vector is not None and run.semantic.index is not None:  # the blend scores every candidate on both scales
        missing = [c for c in lexical_ids if c not in found.cosines]
        found.cosines.update(run.semantic.index.exact_cosines(vector, missing))
    about["linked_documents"] = len(found.rankings[Stage.LINK])
    return run, found


def _source_own_words(run: SearchRun, source: Source, frequencies: lexical.DocumentFrequencies, least: int,
                      elsewhere: Elsewhere) -> list[Term]:
    """The source's distinctive words as its own workspace chooses them (memoised there: its own related search
    reads the same)."""
    home = run_in(run, elsewhere.workspace)
    return [] if home is None else [Term(w.word) for w in related_lexical.words(home, source, frequencies, least)]


def run_in(run: SearchRun, name: str | None) -> SearchRun | None:
    """``run`` as if of workspace ``name`` (one database holds every workspace), or None when it is gone."""
    try:
        return dataclasses.replace(run, ws=workspaces.get(run.conn, name))
    except AutodocError:
        return None


def _nothing_to_relate(conn: apsw.Connection, ws: Workspace, source: Source) -> str | None:
    """Why the answer is empty before anything is asked: no other document, or no section in this one."""
    if not source.sections:
        return f"{source.path} has no sections (it is empty, or frontmatter only): there is nothing to relate"
    if not documents.has_other(conn, ws.id, source.doc_id):
        return f"{source.path} is the only document in workspace {ws.name}: there is nothing to relate it to"
    return None


def _split_options(opts: Any) -> tuple[int | None, dict[str, Any]]:
    """``line`` and the options ``search.query`` takes."""
    if opts is None:
        return None, {}
    if not isinstance(opts, dict):
        raise invalid_params("related options must be an object")
    rest = dict(opts)
    line = rest.pop("line", None)
    if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1):
        raise invalid_params(f"'line' must be a line number (an integer, 1 or more), got {line!r}", option="line")
    return line, rest


def locate(conn: apsw.Connection, ws: Workspace, path: Any, line: int | None) -> Source:
    """The indexed document at ``path`` and the section holding ``line``; a clear error otherwise."""
    absolute, relpath = resolve_inside(ws.root, path)
    document = documents.located(conn, ws.id, relpath)
    if document is None:
        if skipped := _skipped_reason(conn, ws, relpath):
            raise AutodocError(NOT_FOUND, f"{relpath} is not indexed: {skipped}", path=relpath)
        if os.path.isfile(absolute):
            index = [ws.name, {"paths": [relpath]}]
            raise AutodocError(NOT_FOUND, f"{relpath} is not indexed yet", path=relpath, index=index,
                               fix=f"index it (workspace.index {json.dumps(index)}; the "
                                   "Neovim plugin indexes a file when it is saved), then ask again")
        raise AutodocError(NOT_FOUND, f"{relpath} does not exist in workspace {ws.name}", path=relpath,
                           fix="give the path relative to the workspace root; doc.list finds a document by title")
    line_count = document.line_count
    if line is not None and line > line_count:
        raise invalid_params(f"'line' {line} is past the end: {relpath} has {line_count} lines as indexed",
                             option="line", fix=f"give a line from 1 to {line_count}, or none for the whole document")
    sections = chunks.sections_of_document(conn, document.id)
    return Source(document.id, relpath, line_count, hits._tags(document.tags), sections, _holding(sections, line))


def _skipped_reason(conn: apsw.Connection, ws: Workspace, relpath: str) -> str | None:
    """Why the indexer skipped the file at ``relpath`` (binary, too large, ...), if it did."""
    return next((problem["reason"] for problem in documents.problems(conn, ws.id)
                 if problem["path"] == relpath and problem["kind"] == "skipped"), None)


def _holding(sections: list[Section], line: int | None) -> Section | None:
    """The section whose lines hold ``line`` (a section before an abstract), else the next one (the line is
    in the frontmatter, or between sections), else the last."""
    if line is None or not sections:
        return None
    holding = [s for s in sections if s.line_start <= line <= s.line_end]
    if holding:
        return min(holding, key=lambda s: s.kind == "abstract")
    return next((s for s in sections if s.line_start > line), sections[-1])


def _about(source: Source) -> dict[str, Any]:
    section = source.section
    return {"path": source.path, "vector": None, "linked_documents": 0,
            "section": None if section is None else {"breadcrumb": section.breadcrumb, "chunk_id": section.chunk_id,
                                                     "line_start": section.line_start, "line_end": section.line_end}}


def _nothing_in(source: Source) -> str | None:
    if not source.sections:
        return f"{source.path} has no sections (it is empty, or frontmatter only): there is nothing to relate"
    return None


def _vector_from(run: SearchRun, elsewhere: Elsewhere) -> tuple[np.ndarray | None, StageNote]:
    """The vector of a source in another workspace, when this one can search it (the note says why not)."""
    why = run.semantic.why_not()  # this workspace's own reason (no model at all) first
    reason = (why[0] if why is not None else None) or elsewhere.why_not
    if reason is None and run.semantic.index is None:
        reason = "no vectors are loaded"
    if reason is not None or elsewhere.vector is None:
        return None, StageNote.skip(Stage.SEMANTIC, reason or f"the source in {elsewhere.workspace} has no vector yet")
    return elsewhere.vector, StageNote()


def source_vector(semantic: SemanticSource, source: Source) -> np.ndarray | None:
    """The stored vector of the section, or the document's, from the source's own workspace; None when none."""
    if semantic.why_not() is not None or semantic.index is None:
        return None
    held = semantic.index.vectors_of([s.chunk_id for s in source.chosen])
    return document_vector(held) if len(held) else None


def _source_vector(run: SearchRun, source: Source) -> tuple[np.ndarray | None, StageNote]:
    """The stored vector of the section, or the document's; None when there is none (the note says why)."""
    why = run.semantic.why_not()
    if why is not None or run.semantic.index is None:
        return None, StageNote.skip(Stage.SEMANTIC, (why or ("no vectors are loaded", 0))[0])
    held = run.semantic.index.vectors_of([s.chunk_id for s in source.chosen])
    if not len(held):
        embedded, total = run.semantic.progress
        what = "this section has no vector" if source.section is not None else "this document has no vectors"
        return None, StageNote.skip(Stage.SEMANTIC, f"{what} yet ({embedded} of {total} chunk texts are embedded); "
                                                    "related sections come from links and words meanwhile")
    return document_vector(held), StageNote()


def document_vector(held: np.ndarray) -> np.ndarray:
    """One vector for the rows held: the row itself, or per ``DOCUMENT_VECTOR`` the normalised mean or the
    first (the rows are in index order, which is the sections' order when they were embedded together)."""
    if len(held) == 1 or DOCUMENT_VECTOR == "first":
        return held[0]
    mean = held.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / norm if norm else mean).astype(np.float32)


def _semantic(run: SearchRun, source: Source, vector: np.ndarray,
              pool: int) -> tuple[list[int], dict[int, float], StageNote]:
    own = {s.chunk_id for s in source.sections}
    assert run.semantic.index is not None
    found = semantic_stage.recall(run.conn, run.ws.id, vector, run.filters, run.semantic.index, pool + len(own))
    chunk_ids = [c for c in found.chunk_ids if c not in own][:pool]
    note = StageNote.ran(Stage.SEMANTIC, semantic_scanned=found.scanned, semantic_shortlist=found.shortlist,
                         semantic_match=max((found.cosines[c] for c in chunk_ids), default=None))
    return chunk_ids, {c: found.cosines[c] for c in chunk_ids}, note


def _links(run: SearchRun, source: Source, vector: np.ndarray | None,
           lexical_ids: list[int]) -> tuple[list[int], dict[int, float]]:
    """One section of each linked document the filters allow: the one nearest the source's vector, else its
    best lexical candidate, else its first section; nearest first. Returns them and their cosines."""
    linked = linked_documents(run.conn, source.doc_id)
    if not linked:
        return [], {}
    allowed = chunks.of_documents(run.conn, linked, run.filters)
    index = run.semantic.index
    cosines = index.exact_cosines(vector, [c for c, _ in allowed]) if vector is not None and index else {}
    lexical_rank = {c: rank for rank, c in enumerate(lexical_ids)}
    best: dict[int, tuple[tuple, int]] = {}
    for position, (chunk_id, doc_id) in enumerate(allowed):
        key = (-cosines.get(chunk_id, -2.0), lexical_rank.get(chunk_id, len(lexical_ids)), position)
        if doc_id not in best or key < best[doc_id][0]:
            best[doc_id] = (key, chunk_id)
    chosen = [chunk_id for _, chunk_id in sorted(best.values())]
    return chosen, {c: cosines[c] for c in chosen if c in cosines}


def _fused(run: SearchRun, source: Source, found: Found) -> tuple[list[Candidate], StageNote]:
    """The rankings fused as ``search.query`` fuses them (the linear blend, or RRF), a link adding
    ``LINK_WEIGHT`` to the blend; boosts, each retriever's leader kept, at most three per document. The note
    says the blend's weight."""
    rows = hits.load_fusion_rows(run.conn, list(dict.fromkeys(c for ids in found.rankings.values() for c in ids)))
    rows = {c: row for c, row in rows.items() if run.options.abstract_chunk or row.kind != "abstract"}
    kept = {stage: candidates.kept(rows) for stage, candidates in found.candidates().items()}
    kept = {stage: candidates for stage, candidates in kept.items() if candidates.chunk_ids}
    linear = run.ws.option("fusion") == "linear" and Stage.SEMANTIC in kept
    if linear:
        doc_of = {chunk_id: row.doc_id for chunk_id, row in rows.items()}
        fused = fuse.linear(kept, doc_of, RELATED_LEXICAL_WEIGHT)
        for entry in fused:
            if Stage.LINK in entry.via:
                entry.score += LINK_WEIGHT
        fused.sort(key=lambda e: -e.score)
        note = StageNote.measured(fusion_weight=FusionWeight(RELATED_LEXICAL_WEIGHT, link=LINK_WEIGHT))
    else:
        fused = fuse.rrf(kept)
        note = StageNote()
    most_inbound = documents.most_inbound(run.conn, run.ws.id)
    fused = fuse.apply_boosts(fused, {f.chunk_id: rows[f.chunk_id].tags for f in fused},
                              {f.chunk_id: rows[f.chunk_id].inbound_links for f in fused}, most_inbound,
                              set(source.tags))
    retrievers = {stage: candidates for stage, candidates in kept.items() if stage != Stage.LINK}
    fused = fuse.keep_leaders(fused, retrievers, found.cosines if linear else None)
    shown: Counter[int] = Counter()  # sections per document
    capped = []
    for entry in fused:
        row = rows[entry.chunk_id]
        shown[row.doc_id] += 1
        if shown[row.doc_id] <= hits.MAX_PER_DOCUMENT:
            capped.append(Candidate(entry, row))
    return capped, note


@dataclass(slots=True)
class Candidate:
    """A fused section before it becomes a Hit: demotion reads only its document, successor and status."""

    entry: fuse.Fused
    row: hits.FusionRow

    @property
    def doc_id(self) -> int:
        return self.row.doc_id

    @property
    def successor_id(self) -> int | None:
        return self.row.successor_id

    @property
    def superseded(self) -> bool:
        return self.row.superseded

    def hit(self, shown: dict[int, hits.HitRow]) -> Hit:
        """Its Hit, from ``shown``: the hit rows of the candidates shown (read for them alone)."""
        return hits.section_hit(shown[self.entry.chunk_id], self.entry.relevance, self.entry.score, self.entry.via)


def _hits(run: SearchRun, candidates: list[Candidate]) -> list[Hit]:
    shown = hits.load_rows(run.conn, [c.entry.chunk_id for c in candidates])
    return [c.hit(shown) for c in candidates]


def _shown(run: SearchRun, candidates: list[Candidate]) -> list[Hit]:
    """The hits shown, with no ranker, demoted as asked: only they become Hit records, and only their hit rows
    are read (demotion orders the candidates as it would their hits): building all of them, up to three per
    document of every retriever's candidates, took a fifth of a related search, and reading every candidate's
    hit row cost 0.15 ms more than its fusion row."""
    if run.options.demote_superseded:
        candidates = cast(list[Candidate], hits.demote_superseded(cast(list[Hit], candidates)))
    return _hits(run, candidates[: run.options.limit])
