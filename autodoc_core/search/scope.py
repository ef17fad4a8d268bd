"""A search of several workspaces: the scope asked for (a name, a list of names, or "*"), resolved to names, and
the workspaces' answers merged into one (``merged``): one list of hits on one scale, and stages and a semantic
state that describe the whole search.

Each workspace is searched as it would be alone (``pipeline.run_search``), for the whole limit, and its hits keep
their order. Their relevance is relative to the workspace's own candidates (its best hit is near 1 whatever the
query; a words-only list's is flat, by rank), so it cannot tell which workspace answers. The lists are merged by a
match each hit has on scales that hold between workspaces (``weighed``): its BM25 over what the query's words
could score in its workspace (each workspace has its own word statistics), and its raw cosine when every
workspace embeds with one model. A large workspace's many weak hits do not push out a small one's strong one (each
hit is judged by its match, not its place: the best match at or below it in its own list, which keeps that
list's order; weak hits a workspace ranked above its own strong one stand for it), and a workspace whose
semantic stage is not ready is compared on the words alone, which every workspace searched. The sections holding
a pasted identifier or line word for word lead the merged list, as they lead their own workspace's.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from autodoc_core.errors import INVALID_PARAMS, UNKNOWN_WORKSPACE, AutodocError, invalid_params
from autodoc_core.rank.hits import Hit
from autodoc_core.retrieve.query import FacetFilter
from autodoc_core.retrieve.symbols import held_nowhere
from autodoc_core.search.answer import QueryInfo, RankState, SearchAnswer, StageReport
from autodoc_core.search.stages import Stage
from autodoc_core.store.workspace import did_you_mean

EVERY = "*"
READINESS = ("off", "switching", "partial", "ready")  # least ready first
# The words' part of a hit's weighed relevance when every workspace ran both retrievers with one encoder (the
# cosine's is the rest): chosen on the tuning pools (the even halves of techdocs-dev, SciFact train and keps-dev
# and the held-out sets earlier rounds tuned on), whole corpora merged into one database (tests/bench/scope.py,
# doc/benchmarks/scope.md).
LEXICAL_SHARE = 0.2
# How much a workspace's hits are scaled by how common the query's words are there against the workspace where
# they are most common (lexical.prevalence; the factor is that ratio to this power), when every workspace ran
# both retrievers and when they are compared by their words alone: chosen on the same tuning pools (the first
# with LEXICAL_SHARE).
PREVALENCE_POWER = 0.15
PREVALENCE_POWER_WORDS = 0.3
# A workspace's share counts as much as this many sections' worth of the share of every workspace searched
# together: a workspace of 28 sections (the bundled knowledge base) holding a word in 8 of them is not taken to be
# about it as surely as one of 20,000 holding it in 6,000. Not tuned: the corpora measured have 5,000 sections and
# more, whose shares it moves by 2% at most.
PREVALENCE_PRIOR_SECTIONS = 100
NO_WORKSPACE = ("no workspace to search yet: add a folder once, from a shell: autodoc --call workspace.add "
                "'[\"NAME\", \"/path/to/folder\"]' (in Neovim: :AutodocWorkspaceAdd NAME PATH)")


@dataclass(frozen=True)
class Scope:
    """What the caller asked for (``asked``, as passed) and the workspaces it names, each once, in order."""

    asked: Any
    names: tuple[str, ...]

    def to_wire(self) -> dict[str, Any]:
        return {"asked": self.asked, "workspaces": list(self.names)}


def resolve(asked: Any, known: list[str]) -> Scope:
    """The scope ``asked`` for among the ``known`` workspace names. A single name is not checked here: the
    search reads it with today's error when it is unknown."""
    if asked == EVERY:
        if not known:
            raise AutodocError(UNKNOWN_WORKSPACE, NO_WORKSPACE)
        return Scope(asked, tuple(known))
    if isinstance(asked, str):
        return Scope(asked, (asked,))
    if not isinstance(asked, list):
        raise invalid_params(f"the scope must be a workspace name, a list of names or \"*\" (every workspace), "
                             f"got {json.dumps(asked, default=repr)}")
    if not asked:
        raise invalid_params("the scope is an empty list: name at least one workspace, or pass \"*\" to search "
                             "every workspace")
    if not all(isinstance(name, str) for name in asked):
        raise invalid_params(f"the scope's names must be strings, got {json.dumps(asked, default=repr)}")
    if EVERY in asked:
        return resolve(EVERY, known)
    names = tuple(dict.fromkeys(asked))  # a name given twice is searched once
    unknown = [name for name in names if name not in known]
    if unknown:
        near = did_you_mean(unknown[0], known) if len(unknown) == 1 else ""
        listed = f"{near}this database has {', '.join(known)}" if known else "this database has none yet"
        raise AutodocError(UNKNOWN_WORKSPACE, f"no workspace named {', '.join(map(repr, unknown))} ({listed}); "
                           "add one with workspace.add", name=unknown[0], unknown=unknown, workspaces=known)
    return Scope(asked, names)


def lacking_filters(filters: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """A search of several workspaces filters each by its own fields: ``filters`` maps each workspace to the
    fields its query filters on (``type:adr``, not excluded), field -> the filter as typed. A workspace that
    lacks a field another one filters on has no document the filter can match (its query would search the
    filter's words instead): the filters it lacks, by workspace."""
    asked = {field: typed for fields in filters.values() for field, typed in fields.items()}
    return {name: [asked[field] for field in sorted(asked.keys() - fields.keys())] for name, fields in
            filters.items() if asked.keys() - fields.keys()}


def lacking_error(typed: list[str]) -> AutodocError:
    """Why a workspace was not searched: a filter of the query names a field none of its documents has."""
    fields = ", ".join(repr(filter_.partition(":")[0]) for filter_ in typed)
    # short: a picker's footer at 80 columns has room for "kb, ops, zh: not searched: " and this
    return AutodocError(INVALID_PARAMS, f"no document has a {fields} field ({' '.join(typed)})", filters=typed)


@dataclass
class Searched:
    """One workspace's part of a search: where it is, the state of its folder and vectors, and its answer (or the
    error that stopped it)."""

    name: str
    root: str
    folder: str = "ok"
    folder_problem: str | None = None
    answer: SearchAnswer | None = None
    error: AutodocError | None = None
    embedded: tuple[int, int] | None = None  # (embedded, total) while its vectors fill
    paused: bool = False  # embedding.pause holds every fill (the vectors fill again after embedding.resume)
    partial: bool = False  # the answer is a streamed partial one

    def note(self) -> str | None:
        """One sentence on what the user should know of this workspace's part, or None."""
        said = []
        if self.error is not None:
            said.append(f"not searched: {self.error.reason}")
        if self.folder_problem:
            said.append(self.folder_problem)
        if self.answer is not None and self.answer.semantic == "partial" and self.embedded is not None:
            # "still embedding" was said while nothing embedded: paused, or no editor or server running to fill
            state = "embedding paused (embedding.resume fills on)" if self.paused else "not all embedded yet"
            said.append(f"{state}: {self.embedded[0]} of {self.embedded[1]} sections have a vector, and its "
                        "search by meaning covers those")
        return "; ".join(said) or None

    def to_wire(self, hits: int) -> dict[str, Any]:
        wire: dict[str, Any] = {"root": self.root, "hits": hits,
                                "semantic": self.answer.semantic if self.answer is not None else None,
                                "folder": self.folder}
        if (note := self.note()) is not None:
            wire["note"] = note
        return wire


def _shared_scales(answers: dict[str, SearchAnswer]) -> tuple[bool, bool]:
    """Whether every workspace with hits ran the word search, and whether every one ran the semantic stage with
    one encoder (cosines of two encoders are not one scale)."""
    answered = [answer for answer in answers.values() if answer.hits]
    lexical = bool(answered) and all(Stage.LEXICAL in answer.report.performed for answer in answered)
    semantic = bool(answered) and all(Stage.SEMANTIC in answer.report.performed for answer in answered) and \
        len({answer.report.query_info.encoder for answer in answered}) == 1
    return lexical, semantic


def _evidence(hit: Hit, info: QueryInfo) -> tuple[float, float | None]:
    """The hit's match on the two scales: its BM25 over what the query's words could score in its workspace (0 when
    the words did not find it), its raw cosine (None without a vector). Hits that carry neither (related
    sections) take their own relevance times their workspace's best."""
    if info.lexical_attainable is None and hit.bm25 is None and hit.cosine is None:
        # its own relevance in its workspace, on the scale of that workspace's best match
        semantic = None if info.semantic_match is None else info.semantic_match * hit.relevance
        return (info.lexical_match or 0.0) * hit.relevance, semantic
    lexical = (hit.bm25 or 0.0) / info.lexical_attainable if info.lexical_attainable else 0.0
    return lexical, hit.cosine


def weighed(answers: dict[str, SearchAnswer], lexical_share: float = LEXICAL_SHARE,
            capped_from_above: bool = False, prevalence_power: float | None = None) -> dict[str, list[float]]:
    """Each workspace's hits' weighed relevance, in their order: their match on the scales every workspace was
    measured on, each over the best of all the hits (0..1), blended (``lexical_share`` of the words' when both
    are shared); a hit gets at least the figure of any hit its workspace ranked below it, so each list keeps its
    order and a workspace's first hits stand for its best match (its own ranking, which weighed more than these
    two figures, put them first); each workspace's figures are then scaled by how common the query's words are
    there (``_prevalence_factors``). Without a shared scale (a listing of documents by facets), the hits' own
    relevance. ``capped_from_above``: at most the figure of the hit above it instead (the benchmark's
    comparison: it lost more on the tuning pools, words only and with the semantic stage)."""
    lexical, semantic = _shared_scales(answers)
    if not (lexical or semantic):
        return {name: [hit.relevance for hit in answer.hits] for name, answer in answers.items()}
    found = {name: [_evidence(hit, answer.report.query_info) for hit in answer.hits]
             for name, answer in answers.items()}
    # Over the best candidate of any workspace, not of the hits listed: a hit's figure does not move with the limit
    # (a semantic hit with a higher cosine tenth in its list scaled every figure down, 0.91 at 5 hits, 0.72 at 10).
    infos = [answer.report.query_info for answer in answers.values()]
    best_words = max([w for pairs in found.values() for w, _ in pairs]
                     + [info.lexical_match for info in infos if info.lexical_match is not None], default=0.0) or 1.0
    best_cosine = max([c for pairs in found.values() for _, c in pairs if c is not None]
                      + [info.semantic_match for info in infos if info.semantic_match is not None],
                      default=0.0) or 1.0
    result = {}
    for name, pairs in found.items():
        figures = []
        for words, cosine in pairs:
            shares = []
            if lexical:
                shares.append((lexical_share if semantic and cosine is not None else 1.0, words / best_words))
            if semantic and cosine is not None:
                shares.append((1 - lexical_share if lexical else 1.0, max(cosine, 0.0) / best_cosine))
            figures.append(sum(w * v for w, v in shares) / (sum(w for w, _ in shares) or 1.0))
        if capped_from_above:  # never above a hit the workspace ranked over it
            for place in range(1, len(figures)):
                figures[place] = min(figures[place], figures[place - 1])
        else:
            for place in range(len(figures) - 2, -1, -1):
                figures[place] = max(figures[place], figures[place + 1])
        result[name] = figures
    if prevalence_power is None:
        prevalence_power = PREVALENCE_POWER if lexical and semantic else PREVALENCE_POWER_WORDS
    factors = _prevalence_factors(answers, prevalence_power)
    return {name: [figure * factors[name] for figure in figures] for name, figures in result.items()}


def _prevalence_factors(answers: dict[str, SearchAnswer], power: float) -> dict[str, float]:
    """Each workspace's factor: how common the query's words are in it (``lexical.prevalence``) over the most
    they are in any, to ``power``. A question about NGINX's gateway asked of NGINX guides and Kubernetes design
    documents matches sections of both as well by its words' BM25 and its meaning, but its words fill the
    guides. 1 for every workspace when one was not measured (no word to count, or no word search)."""
    infos = {name: answer.report.query_info for name, answer in answers.items()}
    if any(info.lexical_prevalence is None or not info.lexical_sections for info in infos.values()):
        return dict.fromkeys(answers, 1.0)
    found = _shrunk({name: (info.lexical_prevalence, info.lexical_sections) for name, info in infos.items()})
    most = max(found.values())
    return {name: (share / most) ** power for name, share in found.items()} if most else dict.fromkeys(answers, 1.0)


def _shrunk(shares: dict[str, tuple[float, int]]) -> dict[str, float]:
    """Each workspace's share (of its sections, ``shares`` maps a name to both), drawn towards the share of all the
    workspaces together by ``PREVALENCE_PRIOR_SECTIONS`` sections' worth: a few sections say little."""
    pooled = sum(share * sections for share, sections in shares.values()) / sum(n for _, n in shares.values())
    prior = PREVALENCE_PRIOR_SECTIONS
    return {name: (share * sections + prior * pooled) / (sections + prior)
            for name, (share, sections) in shares.items()}


def merged(scope: Scope, parts: list[Searched], limit: int, timing: dict[str, float]) -> SearchAnswer:
    """One answer for the search of ``scope``: the parts' hits, each naming its workspace; a scope of one
    workspace is that workspace's answer with these additions. Raises the first part's error when no workspace
    could be searched."""
    answered = [part for part in parts if part.answer is not None]
    if not answered:
        error = next(part.error for part in parts if part.error is not None)
        raise error
    answers = {part.name: part.answer for part in answered if part.answer is not None}
    if len(parts) == 1:
        answer = answers[parts[0].name]
        hits = [dataclasses.replace(hit, workspace=parts[0].name) for hit in answer.hits]
        whole = dataclasses.replace(answer, hits=hits)
    else:
        whole = _whole(answers, _merged_hits(answers, limit), parts, timing)
    whole.scope = scope.to_wire()
    counts = {name: sum(1 for hit in whole.hits if hit.workspace == name) for name in scope.names}
    whole.workspaces = {part.name: part.to_wire(counts[part.name]) for part in parts}
    return whole


def _merged_hits(answers: dict[str, SearchAnswer], limit: int, lexical_share: float = LEXICAL_SHARE,
                 capped_from_above: bool = False, prevalence_power: float | None = None) -> list[Hit]:
    """The workspaces' hits by weighed relevance (``weighed``), cut to ``limit``; ties go to the higher place in
    its own list, then to the workspace named first."""
    figures = weighed(answers, lexical_share, capped_from_above, prevalence_power)
    holders = {name: _leading_holders(answer) for name, answer in answers.items()}
    ranked = [(place >= holders[name], -round(figure, 4), place, order, name, hit)
              for order, (name, answer) in enumerate(answers.items())
              for place, (hit, figure) in enumerate(zip(answer.hits, figures[name], strict=True))]
    ranked.sort(key=lambda entry: entry[:4])
    best_other = next((-shown for later, shown, *_ in ranked if later), 0.0)  # a holder is shown no lower
    return [dataclasses.replace(hit, relevance=-shown if later else max(-shown, best_other), workspace=name)
            for later, shown, _, _, name, hit in ranked[:limit]]


def _leading_holders(answer: SearchAnswer) -> int:
    """How many of a workspace's first hits hold what was pasted, when the query is an identifier and nothing else
    (the symbol retriever found them) or a line pasted from a log or an error (they hold it word for word): they
    come before the other workspaces' hits that only share its words or meaning, as they come first in their own
    workspace (``fuse.holders_first``). In a sentence an identifier is one word among others
    (``fuse.symbol_only_last``): none lead."""
    shape = answer.report.query_info.shape
    if shape is None:
        return 0
    if shape.pasted:
        return next((place for place, hit in enumerate(answer.hits) if Stage.SYMBOL not in hit.via),
                    len(answer.hits))
    if shape.phrase:
        return next((place for place, hit in enumerate(answer.hits) if not hit.holds_pasted), len(answer.hits))
    return 0


def _whole(answers: dict[str, SearchAnswer], hits: list[Hit], parts: list[Searched],
           timing: dict[str, float]) -> SearchAnswer:
    """The answer of several workspaces: stages performed by any, each skip said with the workspaces that
    skipped it (as is when all did, for one reason), the least ready semantic state, each problem once (named
    with its workspace when not every workspace has it)."""
    first = next(iter(answers.values()))
    performed = list(dict.fromkeys(stage for answer in answers.values() for stage in answer.report.performed))
    report = StageReport(list(first.report.requested), performed, _skipped(answers), _rank_of(answers),
                         first.report.query_info)
    pending = [stage for answer in answers.values() for stage in answer.pending or []]
    modes = {answer.mode_used for answer in answers.values()}
    # each workspace parses the query with its own fields: a filter it lacks is no filter there
    query = dataclasses.replace(first.query, problems=_problems(answers, parts),
                                facets=_each_filter([answer.query.facets for answer in answers.values()]))
    whole = SearchAnswer(hits, modes.pop() if len(modes) == 1 else report.mode_used,
                         min((a.semantic for a in answers.values()), key=_readiness), report, query,
                         _each_filter([answer.facets for answer in answers.values()]), timing, related=first.related)
    if any(answer.pending is not None for answer in answers.values()):
        whole.pending = list(dict.fromkeys(pending))
    return whole


def _each_filter(lists: list[list[FacetFilter]]) -> list[FacetFilter]:
    """The filters any workspace applied, each once, in the order first met."""
    seen: dict[tuple[str, str, bool], FacetFilter] = {}
    for facets in lists:
        for facet in facets:
            seen.setdefault((facet.field, facet.value, facet.negated), facet)
    return list(seen.values())


def _readiness(state: str) -> int:
    return READINESS.index(state) if state in READINESS else 0


def _rank_of(answers: dict[str, SearchAnswer]) -> RankState:
    states = [answer.report.rank for answer in answers.values()]
    return next((rank for rank in states if rank.state == "error"),
                next((rank for rank in states if rank.state != "off"), states[0]))


def _skipped(answers: dict[str, SearchAnswer]) -> dict[Stage, str]:
    """Each stage some workspace skipped, and why: the reason as is when every workspace gave that one, else each
    reason once, after the workspaces that gave it ("adr, notes: the default model is English-only...;
    techdocs: no embedding model is configured")."""
    stages = dict.fromkeys(stage for answer in answers.values() for stage in answer.report.skipped)
    return {stage: "; ".join(_each_once(_grouped((name, answer.report.skipped[stage])
                                                 for name, answer in answers.items()
                                                 if stage in answer.report.skipped), len(answers)))
            for stage in stages}


def _grouped(said: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Each text said by workspaces, (name, text) pairs, with the names that said it, in the order first said."""
    names: dict[str, list[str]] = {}
    for name, text in said:
        names.setdefault(text, []).append(name)
    return names


def _each_once(names: dict[str, list[str]], everyone: int) -> list[str]:
    """Each text once (``_grouped``): as it is when all ``everyone`` workspaces said it (a workspace's own words
    made to speak of them all), else after their names."""
    return [_of_all(text) if len(said_by) == everyone else f"{', '.join(said_by)}: {text}"
            for text, said_by in names.items()]


def _of_all(text: str) -> str:
    """What each workspace said of itself, said of every workspace searched ("no ranker is configured for this
    workspace" -> "... for any workspace searched")."""
    return text.replace("for this workspace", "for any workspace searched")


def _problems(answers: dict[str, SearchAnswer], parts: list[Searched]) -> list[str]:
    """The workspaces' problems, each once (named with the workspaces that have it when not all do). An excluding
    filter on a field a workspace lacks excludes nothing there: not said when another workspace has the field
    (said everywhere, it is a misspelt field)."""
    unknown_everywhere = set.intersection(*(set(answer.query.excluded_unknown) for answer in answers.values()))
    said = []
    for name, answer in answers.items():
        fine = {problem for field, problem in answer.query.excluded_unknown.items() if field not in unknown_everywhere}
        said += [(name, problem) for problem in answer.query.problems if problem not in fine]
    # a filter three workspaces lack: said once, after their names
    unsearched = _grouped((part.name, part.error.reason) for part in parts if part.error is not None)
    # which workspaces were searched, and how, first: a picker's footer has room for one problem at 80 columns
    return [f"{', '.join(names)}: not searched: {reason}" for reason, names in unsearched.items()] \
        + [f"{part.name}: folder {part.folder}, its hits come from its index" for part in parts
           if part.folder != "ok" and part.answer is not None] \
        + _each_once(_grouped(said), len(answers)) + _held_nowhere(answers)


def _held_nowhere(answers: dict[str, SearchAnswer]) -> list[str]:
    """The pasted identifier that no workspace's candidates hold as written, said once (a workspace's search of
    several leaves it to the merge: one that holds it is enough)."""
    infos = [answer.report.query_info for answer in answers.values()]
    literal = infos[0].shape.literal if infos[0].shape is not None else ""
    if not literal or any(info.holding_pasted != 0 for info in infos):
        return []
    return [held_nowhere(literal, any(answer.facets for answer in answers.values()))]
