"""Every workspace at once (issue 49): the merged list against each workspace searched alone, and its speed.

Four corpora go into ONE database, each its own workspace: techdocs, SciFact, the KEPs (the labelled ones) and the
Rust RFCs (a fourth for the speed of four). Each labelled query is searched in its own workspace alone and in the
three labelled workspaces together; hits are told apart by workspace, so a hit of another workspace never counts
as relevant. Recall@3 and nDCG@10 (by document, as tests/bench/retrieval.py) of both, and the difference.

The merged list is the product's own: each workspace's answer from ``Engine._search_one`` (what a search of a
scope runs for each workspace) merged by ``search.scope._merged_hits``. Whole corpora, embedded with the default
local model (about 13 minutes on 2 idle cores, once: keep the database with ``--db``), every stage and words only.
``LEXICAL_SHARE`` and the powers of the workspaces' prevalence factor (``PREVALENCE_POWER``, with both
retrievers, and ``PREVALENCE_POWER_WORDS``) are chosen here on the tuning pools and reported on the reporting
pools (``pooled_sets``).
``--only semantic`` measures the earlier subset of each corpus (``semantic_sets``) instead.

Speed: the median wall time of ``Engine.search_query`` for one workspace, two (techdocs and the KEPs) and four,
every stage and words only, over the reporting queries; and its median CPU time (every thread of the process),
over this machine's cores: a floor no schedule of that work can beat.

    python -m tests.bench.scope --shared ../shared [--db /tmp/scope.db] --out doc/benchmarks/scope.md
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from autodoc_core.providers.embedders import DEFAULT_EMBEDDER
from autodoc_core.retrieve.semantic_stage import QueryVectors
from autodoc_core.search import scope as scope_merge
from autodoc_core.search.answer import SearchAnswer
from autodoc_core.service.engine import Engine
from tests.bench.retrieval import load_queries, ndcg_at_10, recall_at

ROOT = Path(__file__).resolve().parents[2]
CORPORA = {"techdocs": "techdocs", "scifact": "scifact", "keps": "keps", "rfcs": "rust-rfcs/text"}
LABELLED = ("techdocs", "scifact", "keps")
OPTIONS = {"stages": ["lexical"], "limit": 50, "snippets": False}
SPEED_REPEATS = 3


def query_sets(shared: Path) -> list[tuple[str, str, list[dict], bool]]:
    """(name, workspace, queries, tuning)."""
    local = ROOT / "tests" / "bench" / "eval"
    whole = {"techdocs": load_queries(shared / "eval" / "techdocs-dev.jsonl"),
             "scifact": load_queries(shared / "eval" / "scifact-train.jsonl"),
             "keps": load_queries(local / "keps-dev.jsonl")}
    sets = []
    for workspace, queries in whole.items():
        sets.append((f"{workspace} even (tuning)", workspace, queries[0::2], True))
        sets.append((f"{workspace} odd", workspace, queries[1::2], False))
    sets.append(("techdocs-heldout9", "techdocs", load_queries(local / "techdocs-heldout9.jsonl"), False))
    sets.append(("keps-heldout9", "keps", load_queries(local / "keps-heldout9.jsonl"), False))
    return sets


EARLIER_SETS = ("heldout", *(f"heldout{n}" for n in (2, 3, 4, 5, 6, 7, 8, 11, 12)))
# Queries of another shape, reported apart: identifiers, paths and sentences around identifiers (earlier rounds
# tuned the symbol stage on some; no decision of the merge read them).
IDENTIFIER_SETS = {"techdocs": ("mixed", "identifiers", "identifiers2", "identifiers3", "identifiers4", "paths"),
                   "keps": ("mixed", "identifiers", "identifiers2", "paths")}
PART = None  # a set's role: a part of a reporting pool, shown on its own (tuning is True, reporting False)


def pooled_sets(shared: Path) -> list[tuple[str, str, list[dict], bool | None]]:
    """The whole corpora's pools, by corpus: tuning (the even halves, and for techdocs and the KEPs the held-out
    sets earlier rounds tuned single-workspace retrieval on, which no decision of the merge had read) and
    reporting (the odd halves, and for techdocs and the KEPs heldout9 and heldout10, held out from every
    decision), the identifier, path and mixed sets apart, then each reporting pool's parts on their own. A pool
    of about 100 queries tells a loss of 0.02 from none (one query moves a set of 40 by 0.025)."""
    local = ROOT / "tests" / "bench" / "eval"
    halves = {(ws, tuning): queries for name, ws, queries, tuning in query_sets(shared)[:6]}
    held = {ws: [(f"{ws}-{name}", load_queries(local / f"{ws}-{name}.jsonl")) for name in ("heldout9", "heldout10")]
            for ws in ("techdocs", "keps")}
    sets: list[tuple[str, str, list[dict], bool | None]] = []
    for ws in LABELLED:
        earlier = [q for name in EARLIER_SETS for q in load_queries(local / f"{ws}-{name}.jsonl")] if ws in held else []
        sets.append((f"{ws} tuning pool", ws, halves[ws, True] + earlier, True))
    for ws in LABELLED:
        sets.append((f"{ws} reporting pool", ws, halves[ws, False] + [q for _, qs in held.get(ws, []) for q in qs],
                     False))
    for ws, names in IDENTIFIER_SETS.items():
        sets.append((f"{ws} identifiers, paths and mixed", ws,
                     [q for name in names for q in load_queries(local / f"{ws}-{name}.jsonl")], False))
    for ws in held:
        sets += [(f"{ws} odd half (part)", ws, halves[ws, False], PART),
                 *((f"{name} (part)", ws, queries, PART) for name, queries in held[ws])]
    return sets


def database(engine: Engine, shared: Path, embedded: bool = False) -> None:
    """The four corpora indexed (words only) into the engine's database, unless they are there already;
    ``embedded``: every one embedded with the default local model too (about 13 minutes on 2 idle cores)."""
    known = {ws["name"] for ws in engine.workspace_list()}
    for name, folder in CORPORA.items():
        if name not in known:
            engine.workspace_add(name, str(shared / "data" / (folder if "/" in folder else f"{folder}/docs")))
            engine.workspace_configure(name, {"embedder": {"provider": "none"}})
            started = time.perf_counter()
            engine.workspace_index(name)
            print(f"indexed {name} in {time.perf_counter() - started:.0f} s", flush=True)
    for name in CORPORA if embedded else ():
        engine.workspace_configure(name, {"embedder": DEFAULT_EMBEDDER})
        started = time.perf_counter()
        engine.workspace_index(name, {"wait": "semantic"})
        print(f"embedded {name} in {time.perf_counter() - started:.0f} s", flush=True)


SEMANTIC_QUERIES = 60  # per labelled set: the first of its lines (half tuning, half reporting as above)
HELD_OUT_QUERIES = 40  # per held-out set, all reporting
DISTRACTORS = {"techdocs": 300, "scifact": 600, "keps": 40}  # documents no chosen query is about, per corpus


def semantic_sets(shared: Path) -> list[tuple[str, str, list[dict], bool]]:
    """The query sets of the semantic subset: each labelled set's first SEMANTIC_QUERIES lines, split as above,
    and the held-out sets' first HELD_OUT_QUERIES."""
    sets = query_sets(shared)
    return [(f"{n} (subset)", w, q[: SEMANTIC_QUERIES // 2], t) for n, w, q, t in sets[:6]] + \
        [(f"{n} (subset)", w, q[:HELD_OUT_QUERIES], t) for n, w, q, t in sets[6:]]


def semantic_database(engine: Engine, shared: Path, folders: Path) -> None:
    """Part of each labelled corpus, indexed and embedded with the default local model: the documents the chosen
    queries are about and a seeded sample of the others (embedding whole corpora takes most of an hour on 2
    cores)."""
    import random
    import shutil

    known = {ws["name"] for ws in engine.workspace_list()}
    wanted: dict[str, set[str]] = {name: set() for name in LABELLED}
    for _, workspace, queries, _ in semantic_sets(shared):
        for q in queries:
            wanted[workspace].update(q["relevant"])
    for name in LABELLED:
        if name in known:
            continue
        source = shared / "data" / CORPORA[name] / "docs"
        others = sorted(str(p.relative_to(source)) for p in source.rglob("*.md") if
                        str(p.relative_to(source)) not in wanted[name])
        chosen = wanted[name] | set(random.Random(49).sample(others, min(DISTRACTORS[name], len(others))))
        for relative in chosen:
            target = folders / name / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            if (source / relative).exists():
                shutil.copy(source / relative, target)
        engine.workspace_add(name, str(folders / name))
        started = time.perf_counter()
        engine.workspace_index(name, {"wait": "semantic"})
        print(f"indexed and embedded {len(chosen)} documents of {name} in {time.perf_counter() - started:.0f} s",
              flush=True)


def ranked(hits: list, workspace: str | None = None) -> list[str]:
    """Documents in order, named with their workspace."""
    return list(dict.fromkeys(f"{workspace or hit.workspace}/{hit.path}" for hit in hits))


def captured(engine: Engine, queries: list[dict], options: dict) -> list[dict[str, SearchAnswer]]:
    """Each query's answer in each labelled workspace, as a search of a scope gets them (one of several, the
    query embedded once)."""
    return [_answers(engine, q["query"], options) if not q.get("facets") else _facet_answers(engine, q, options)
            for q in queries]


def _answers(engine: Engine, query: str, options: dict) -> dict[str, SearchAnswer]:
    shared = QueryVectors()
    return {name: engine._search_one(name, query, options, None, shared) for name in LABELLED}


def _facet_answers(engine: Engine, query: dict, options: dict) -> dict[str, SearchAnswer]:
    """A facet query is filtered in each workspace by its own fields: one that lacks the field gives no hits."""
    answers = {}
    for name in LABELLED:
        try:
            answers[name] = engine._search_one(name, query["query"], {**options, "facets": query["facets"]}, None,
                                               QueryVectors())
        except Exception:  # noqa: BLE001 (the field is not this workspace's: it has no hits for it)
            continue
    return answers


def figures(lists: list[list[str]], queries: list[dict], own: str) -> tuple[float, float]:
    relevant = [{f"{own}/{path}" for path in q["relevant"]} for q in queries]
    recall = statistics.fmean(recall_at(r, rel, 3) for r, rel in zip(lists, relevant, strict=True))
    ndcg = statistics.fmean(ndcg_at_10(r, rel) for r, rel in zip(lists, relevant, strict=True))
    return recall, ndcg


def _by_local_relevance(answers: dict[str, SearchAnswer]) -> list:
    import dataclasses
    pooled = [(-h.relevance, place, order, dataclasses.replace(h, workspace=name))
              for order, (name, a) in enumerate(answers.items()) for place, h in enumerate(a.hits)]
    return [entry[3] for entry in sorted(pooled, key=lambda e: e[:3])]


def _round_robin(answers: dict[str, SearchAnswer]) -> list:
    import dataclasses
    lists = [[dataclasses.replace(h, workspace=name) for h in a.hits] for name, a in answers.items()]
    return [hit for row in zip(*lists, strict=False) for hit in row]


MERGES = {"each hit's match, raised to any below it, times its workspace's prevalence factor (the product)":
          lambda answers, share, power: scope_merge._merged_hits(answers, 50, share, prevalence_power=power),
          "the same without the prevalence factor":
          lambda answers, share, power: scope_merge._merged_hits(answers, 50, share, prevalence_power=0.0),
          "each hit's match, capped by the one above it": lambda answers, share, power: scope_merge._merged_hits(
              answers, 50, share, capped_from_above=True, prevalence_power=0.0),
          "each workspace's own relevance": lambda answers, share, power: _by_local_relevance(answers),
          "round robin": lambda answers, share, power: _round_robin(answers)}
PRODUCT = next(iter(MERGES))
SHARES = (0.1, 0.15, 0.2, 0.25, 0.3, 0.4)
POWERS = (0.0, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)


def quality(engine: Engine, sets: list[tuple[str, str, list[dict], bool | None]], both: bool,
            options: dict) -> tuple[list[str], float]:
    """The tables for these query sets. LEXICAL_SHARE (which only matters when the semantic stage ran everywhere,
    ``both``) and the prevalence factor's power are tried on the tuning sets; the product's are reported."""
    captures = {name: (workspace, queries, captured(engine, queries, options), tuning)
                for name, workspace, queries, tuning in sets}
    alone = {name: figures([ranked(a[workspace].hits, workspace) for a in answers], queries, workspace)
             for name, (workspace, queries, answers, _) in captures.items()}

    def together(name: str, merge: str, share: float, power: float | None) -> tuple[float, float]:
        workspace, queries, answers, _ = captures[name]
        return figures([ranked(MERGES[merge](a, share, power)) for a in answers], queries, workspace)

    def tuning_loss(share: float, power: float) -> float:
        return statistics.fmean(alone[n][i] - together(n, PRODUCT, share, power)[i] for n, c in captures.items()
                                if c[3] is True for i in (0, 1))

    share = scope_merge.LEXICAL_SHARE
    power = scope_merge.PREVALENCE_POWER if both else scope_merge.PREVALENCE_POWER_WORDS
    product = None  # the product's rule: the power of the scales the query's workspaces share
    shares = SHARES if both else (share,)
    losses = {(s, p): tuning_loss(s, p) for s in shares for p in POWERS}
    chosen = min(losses, key=lambda key: (round(losses[key], 4), key[1], abs(key[0] - 0.5)))
    header = "| LEXICAL_SHARE | " + " | ".join(f"power {p}" for p in POWERS) + " |"
    lines = ["Tried on the tuning sets (mean of Recall@3 and nDCG@10 lost), LEXICAL_SHARE by the prevalence factor's "
             "power" + ("" if both else " (words only: LEXICAL_SHARE plays no part)") + ":", "", header,
             "|---|" + "---|" * len(POWERS),
             *(f"| {s} | " + " | ".join(f"{losses[(s, p)]:.4f}" for p in POWERS) + " |" for s in shares), "",
             f"Lowest: LEXICAL_SHARE {chosen[0]}, power {chosen[1]}; the product's are {share} and {power}.", ""]
    lines += ["| query set | queries | Recall@3 alone | together | diff | nDCG@10 alone | together | diff |",
              "|---|---|---|---|---|---|---|---|"]
    for name, (_, queries, _, _) in captures.items():
        (r1, n1), (r2, n2) = alone[name], together(name, PRODUCT, share, product)
        lines.append(f"| {name} | {len(queries)} | {r1:.3f} | {r2:.3f} | {r2 - r1:+.3f} | {n1:.3f} | {n2:.3f} | "
                     f"{n2 - n1:+.3f} |")
    others = [m for m in MERGES if m != PRODUCT]
    lines += ["", "Other merges, for comparison (difference to alone, Recall@3 / nDCG@10):", "",
              f"| query set | {' | '.join(others)} |", "|---|" + "---|" * len(others)]
    for name in captures:
        r1, n1 = alone[name]
        cells = [f"{r - r1:+.3f} / {n - n1:+.3f}" for r, n in (together(name, m, share, product) for m in others)]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    worst = min(min(together(n, PRODUCT, share, product)[i] - alone[n][i] for i in (0, 1))
                for n, c in captures.items() if c[3] is False)
    return lines, worst


def semantic_quality(shared: Path, db: Path) -> list[str]:
    """The subset's figures, every stage (the local encoder embeds the queries)."""
    with Engine(db) as engine:
        semantic_database(engine, shared, db.parent / f"{db.stem}-folders")
        lines, worst = quality(engine, semantic_sets(shared), both=True, options={"limit": 50, "snippets": False})
    return [f"{SEMANTIC_QUERIES // 2} queries of each half and {HELD_OUT_QUERIES} of each held-out set, on their "
            f"relevant documents and {DISTRACTORS} others (seeded), hybrid (lexical and semantic, the default local "
            "model).", "", *lines, "", f"Worst difference on a reporting set: {worst:+.3f} (target: no more than 0.02 "
            "lower)."]


def speed(engine: Engine, queries: list[tuple[str, str]], scopes: dict[str, list[str] | str | None], opts: dict,
          names: list[str]) -> list[str]:
    """Median wall time of ``search_query`` for each scope (None: the query's own workspace), the queries
    interleaved, and of each workspace alone; and the median CPU time each scope's search takes (every thread of
    the process), which no schedule on this machine's cores can beat: its CPU time over the cores is a floor."""
    times: dict[str, list[float]] = {label: [] for label in scopes}
    cpu: dict[str, list[float]] = {label: [] for label in scopes}
    singles: dict[str, list[float]] = {name: [] for name in names}

    def timed(asked: str | list[str], text: str) -> tuple[float, float]:
        _forget_query_vectors(engine)  # each search embeds its query, as a new query typed does
        started, used = time.perf_counter(), time.process_time()
        engine.search_query(asked, text, opts)
        return (time.perf_counter() - started) * 1000, (time.process_time() - used) * 1000

    for _ in range(SPEED_REPEATS):
        for workspace, text in queries:
            for label, asked in scopes.items():
                wall, used = timed(asked or workspace, text)
                times[label].append(wall)
                cpu[label].append(used)
            for name in names:
                singles[name].append(timed(name, text)[0])
    reference = statistics.median(times[next(iter(scopes))])
    pooled = statistics.median([ms for values in singles.values() for ms in values])
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    lines = ["| workspaces searched | median ms | ratio to the first row | ratio to any one workspace's median | "
             f"median CPU ms | floor on {cores} cores (CPU ms / {cores}), ratio to the first row |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {label} | {statistics.median(ms):.1f} | {statistics.median(ms) / reference:.2f} | "
              f"{statistics.median(ms) / pooled:.2f} | {statistics.median(cpu[label]):.1f} | "
              f"{statistics.median(cpu[label]) / cores / reference:.2f} |" for label, ms in times.items()]
    lines += ["", "Each workspace alone (the same queries in every one):", "", "| workspace | median ms |",
              "|---|---|", *(f"| {name} | {statistics.median(ms):.1f} |" for name, ms in singles.items()),
              f"| any one (pooled) | {pooled:.1f} |", "",
              f"{len(queries)} queries x {SPEED_REPEATS} rounds, limit 10, {opts or 'every stage'}. CPU time is the "
              "process's (every thread) during the search."]
    return lines


def _forget_query_vectors(engine: Engine) -> None:
    """Empty the local encoders' query caches: the same texts are searched in every scope here, and a cached
    vector would spare all but the first search its embedding."""
    for runtime in engine._semantic._runtimes.values():
        for embedder in runtime.embedders.values():
            if embedder is not None and hasattr(embedder, "_query_cache"):
                with embedder._cache_lock:
                    embedder._query_cache.clear()


def words_speed(engine: Engine, shared: Path) -> list[str]:
    queries = [(ws, q["query"]) for name, ws, qs, tuning in query_sets(shared) if not tuning for q in qs][::3]
    return speed(engine, queries, {"one (its own)": None, "two (techdocs, keps)": ["techdocs", "keps"],
                                   "four (*)": "*"}, {"stages": ["lexical"]}, list(CORPORA))


def every_stage_speed(engine: Engine, shared: Path) -> list[str]:
    """The whole corpora, every stage (the query embedded once for every workspace)."""
    queries = [(ws, q["query"]) for name, ws, qs, tuning in query_sets(shared) if not tuning for q in qs][::3]
    return speed(engine, queries, {"one (its own)": None, "two (techdocs, keps)": ["techdocs", "keps"],
                                   "four (*)": "*"}, {}, list(CORPORA))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--db", type=Path, help="a database to keep between runs (built when missing)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", choices=("quality", "speed", "build", "semantic"))
    parser.add_argument("--semantic-db", type=Path, help="the semantic subset's database (built when missing; "
                        "--only semantic)")
    args = parser.parse_args()
    if args.only == "semantic":
        with tempfile.TemporaryDirectory() as scratch:
            print("\n".join(semantic_quality(args.shared, args.semantic_db or Path(scratch) / "semantic.db")))
        return 0
    with tempfile.TemporaryDirectory() as scratch, Engine(args.db or Path(scratch) / "scope.db") as engine:
        database(engine, args.shared, embedded=True)
        if args.only == "build":
            return 0
        lines = ["# Every workspace at once: one merged list against each workspace alone", "",
                 f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}. Reproduce: `python -m "
                 "tests.bench.scope --shared ../shared --out doc/benchmarks/scope.md` (`make bench`).", ""]
        if args.only in (None, "quality"):
            semantic_lines, worst = quality(engine, pooled_sets(args.shared), both=True,
                                            options={"limit": 50, "snippets": False})
            lines += ["## Ranking with every stage (whole corpora)", "", *semantic_lines, "",
                      f"Worst difference on a reporting pool: {worst:+.4f} (target: no more than 0.02 lower).", ""]
            words_lines, worst = quality(engine, pooled_sets(args.shared), both=False, options=OPTIONS)
            lines += ["## Ranking, words only (whole corpora; as while no workspace has its vectors yet)", "",
                      *words_lines, "",
                      f"Worst difference on a reporting pool: {worst:+.4f} (target: no more than 0.02 lower).", ""]
        if args.only in (None, "speed"):
            lines += ["## Speed", "", "### Every stage, whole corpora", "", *every_stage_speed(engine, args.shared),
                      "", "### Words only, whole corpora", "", *words_speed(engine, args.shared), ""]
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
