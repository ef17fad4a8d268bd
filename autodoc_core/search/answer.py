"""A search's answer as a typed record, and its JSON shape made in one place (``SearchAnswer.to_wire``).

Each stage of a search returns a ``StageNote`` (the stage it performed or skipped and why, what it measured of
the query, the ranker's state, problems to say) beside what it found; ``report_of`` composes the notes so far
into the answer's ``StageReport``, so an answer handed over while the search goes on (a stream's partial
answer) and the final one are each made from the notes of their own stages.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from autodoc_core.rank.hits import Hit, in_relevance_order
from autodoc_core.retrieve.query import FacetFilter, ParsedQuery
from autodoc_core.retrieve.symbols import QueryShape
from autodoc_core.search.stages import RETRIEVERS, Stage


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


@dataclass(frozen=True)
class RankState:
    """The cross-encoder's part: off, not_requested, not_applicable, pending, ranked or error."""

    state: str = "off"
    model: str | None = None
    error: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"state": self.state, "model": self.model, "error": self.error}


@dataclass(frozen=True)
class FusionWeight:
    """The blend's lexical weight and where it came from."""

    value: float | str
    auto: bool | None = None  # None: not a search's own weight (related sections)
    sections_per_document: int | None = None  # for "auto"
    identifier_query: bool = False
    link: float | None = None  # related sections: what a link adds

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"value": self.value}
        if self.auto is not None:
            wire["auto"] = self.auto
        if self.sections_per_document is not None:
            wire["sections_per_document"] = self.sections_per_document
        if self.identifier_query:
            wire["identifier_query"] = True
        if self.link is not None:
            wire["link"] = self.link
        return wire


@dataclass
class QueryInfo:
    """What the stages found out about the query (the answer's ``query`` object beside its terms); a figure
    left None was not measured and is not said."""

    shape: QueryShape | None = None
    strategy: str | None = None
    candidates: int | None = None
    common_terms_left_out: list[str] | None = None
    semantic_scanned: int | None = None
    semantic_shortlist: int | None = None
    encoder: str | None = None
    names_encoder: bool = False  # a search's semantic stage says its encoder, even None; related's does not
    holding_pasted: int | None = None
    fusion_weight: FusionWeight | None = None
    filled: tuple[int, int] | None = None  # (candidates asked for, hits added) by _filled
    # How well the workspace matches the query on scales that hold between workspaces (not sent): the best
    # chunk's BM25 over what its words could score (lexical.match_share), the best raw cosine. A search of
    # several workspaces compares hits by them where the hits do not carry their own (search.scope).
    lexical_match: float | None = None
    semantic_match: float | None = None
    lexical_attainable: float | None = None  # a hit's BM25 over it is its own match (lexical.attainable)
    lexical_prevalence: float | None = None  # how common the query's words are here (lexical.prevalence)
    lexical_sections: int | None = None  # the sections that share is of

    def to_wire(self) -> dict[str, Any]:
        figures = {"strategy": self.strategy, "candidates": self.candidates,
                   "common_terms_left_out": self.common_terms_left_out, "semantic_scanned": self.semantic_scanned,
                   "semantic_shortlist": self.semantic_shortlist, "holding_pasted": self.holding_pasted}
        wire: dict[str, Any] = {k: v for k, v in figures.items() if v is not None}
        if self.names_encoder:
            wire["encoder"] = self.encoder
        if self.fusion_weight is not None:
            wire["fusion_weight"] = self.fusion_weight.to_wire()
        if self.filled is not None:
            wire["filled"] = {"candidates": self.filled[0], "added": self.filled[1]}
        return wire


@dataclass(frozen=True)
class StageReport:
    """What a search was asked to run, what it ran, what it skipped and why; the ranker's state."""

    requested: list[Stage]
    performed: list[Stage] = field(default_factory=list)
    skipped: dict[Stage, str] = field(default_factory=dict)
    rank: RankState = field(default_factory=RankState)
    query_info: QueryInfo = field(default_factory=QueryInfo)

    @property
    def mode_used(self) -> str:
        retrievers = [p for p in self.performed if p in RETRIEVERS]
        return "hybrid" if len(retrievers) > 1 else (str(retrievers[0]) if retrievers else "none")


@dataclass(frozen=True, slots=True)
class StageNote:
    """What one stage tells the answer: the stage it performed, those it skipped and why, the figures it
    measured of the query (by ``QueryInfo`` field; None: not measured), the ranker's state, problems with the
    query. ``report_of`` composes them in order."""

    performed: Stage | None = None
    skipped: tuple[tuple[Stage, str], ...] = ()
    info: Mapping[str, Any] | None = None
    rank: RankState | None = None
    problems: tuple[str, ...] = ()

    @classmethod
    def ran(cls, stage: Stage, **figures: Any) -> StageNote:
        """``stage`` performed, having measured ``figures`` (QueryInfo fields)."""
        return cls(stage, info=_measured(figures))

    @classmethod
    def measured(cls, **figures: Any) -> StageNote:
        return cls(info=_measured(figures))

    @classmethod
    def skip(cls, stage: Stage, why: str) -> StageNote:
        return cls(skipped=((stage, why),))


def _measured(figures: dict[str, Any]) -> dict[str, Any] | None:
    measured = {name: value for name, value in figures.items() if value is not None}
    return measured or None


NOTHING_TO_SAY = StageNote()


def report_of(requested: list[Stage], notes: Iterable[StageNote]) -> StageReport:
    """The report the ``notes`` make, in the order their stages ran (a later note's figure or skip reason
    replaces an earlier one's)."""
    performed: list[Stage] = []
    skipped: dict[Stage, str] = {}
    measured: dict[str, Any] = {}
    rank = None
    for note in notes:
        if note.performed is not None:
            performed.append(note.performed)
        if note.skipped:
            skipped.update(note.skipped)
        if note.info:
            measured.update(note.info)
        if note.rank is not None:
            rank = note.rank
    return StageReport(list(requested), performed, skipped, rank or RankState(), QueryInfo(**measured))


def problems_of(notes: Iterable[StageNote]) -> list[str]:
    return [problem for note in notes for problem in note.problems]


@dataclass
class SearchAnswer:
    """One ``search.query`` or ``search.related`` answer (see ``:help autodoc-search``)."""

    hits: list[Hit]
    mode_used: str
    semantic: str  # the workspace's semantic state
    report: StageReport
    query: ParsedQuery
    facets: list[FacetFilter]
    timing: dict[str, float]
    related: dict[str, Any] | None = None  # search.related: the source it relates to
    pending: list[Stage] | None = None  # a partial answer: the stages still to run
    scope: dict[str, Any] | None = None  # what was asked and the workspaces searched (search.scope)
    workspaces: dict[str, dict[str, Any]] | None = None  # each searched workspace's root, hits and state

    @classmethod
    def of(cls, report: StageReport, query: ParsedQuery, facets: list[FacetFilter], hits: list[Hit],
           mode_used: str, semantic: str, timing: dict[str, float]) -> SearchAnswer:
        """The answer with a ``report`` of its own (``report_of`` makes one per answer); the timer going on, and
        the query's problems, do not reach it."""
        kept_query = dataclasses.replace(query, problems=list(query.problems))
        return cls(in_relevance_order(hits), mode_used, semantic, report, kept_query, list(facets), dict(timing))

    def as_partial(self, pending: list[Stage]) -> SearchAnswer:
        """This answer handed over before the ``pending`` stages ran."""
        if Stage.RERANK in pending:
            self.report = dataclasses.replace(self.report, rank=dataclasses.replace(self.report.rank, state="pending"))
        self.pending = list(pending)
        return self

    @property
    def performed(self) -> list[Stage]:
        return self.report.performed

    def stages_to_wire(self) -> dict[str, Any]:
        report = self.report
        stages: dict[str, Any] = {"requested": [str(s) for s in report.requested],
                                  "performed": [str(s) for s in report.performed],
                                  "skipped": {str(s): why for s, why in report.skipped.items()}}
        if self.pending is not None:
            stages["pending"] = [str(s) for s in self.pending]
        return stages

    def to_wire(self) -> dict[str, Any]:
        """The JSON-RPC, MCP and editor shape of the answer."""
        report, info = self.report, self.report.query_info
        stages = self.stages_to_wire()
        wire: dict[str, Any] = {
            "hits": [hit.to_dict() for hit in self.hits],
            "mode_used": self.mode_used,
            "query_shape": (info.shape or QueryShape("text")).as_dict(),
            "semantic": self.semantic,
            "rank": report.rank.to_wire(),
            "stages": stages,
            "query": {
                "terms": [t.text for t in self.query.terms],
                "facets": [{"field": f.field, "value": f.value, "negated": f.negated} for f in self.facets],
                "dropped_stopwords": self.query.dropped_stopwords,
                "problems": self.query.problems,
                "terms_left_out": self.query.terms_left_out,
                **info.to_wire(),
            },
            "timing": self.timing,
        }
        if self.pending is not None:
            wire["partial"] = True
        if self.related is not None:
            wire["related"] = self.related
        if self.scope is not None:
            wire["scope"] = self.scope
        if self.workspaces is not None:
            wire["workspaces"] = self.workspaces
        return wire
