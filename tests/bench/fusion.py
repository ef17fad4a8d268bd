"""Fusion benchmark: lexical, semantic and hybrid per query set and per kind of query, and the fusions tried.

Each query runs through the engine three times (lexical only, semantic only, hybrid), so facets and filters
apply exactly as in production. The hybrid run records what ``search._fuse`` is given (each retriever's
candidate chunks in order, their BM25 scores and cosines, and each candidate's document, tags, links and
supersession); those records are cached as JSON and every fusion is then replayed offline through the
product's own boosts, identifier backstop (``keep_leaders``), per-document cap and superseded demotion.
Ranking is by document (a document's best chunk), as in ``tests/bench/retrieval.py``.

Parameters are chosen on the tuning sets only (techdocs-dev, SciFact tuning half = claims at even 0-based
line positions of scifact-train.jsonl, keps-dev); ``--report`` adds the reporting sets (techdocs-validation,
SciFact odd half, keps-validation), meant to be run once the choice is made.

    python -m tests.bench.fusion --shared ../shared --db /work/benchdb/bench.db [--report] [--out FILE]

Without ``--db`` it indexes and embeds the three corpora into a temporary database (long).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autodoc_core import fuse, search, shape
from autodoc_core.engine import Engine
from tests.bench.retrieval import documents_in_order, load_queries, ndcg_at_10, recall_at, search_options

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ("scifact", "techdocs", "keps")


@dataclass
class QuerySet:
    name: str
    workspace: str
    path: Path
    positions: str  # "all", "even" or "odd" 0-based line positions
    tuning: bool

    def load(self) -> list[dict]:
        queries = load_queries(self.path)
        if self.positions != "all":
            queries = queries[0 if self.positions == "even" else 1 :: 2]
        return [{**q, "kind": q.get("kind") or "claim"} for q in queries]


def query_sets(shared: Path) -> list[QuerySet]:
    evals = shared / "eval"
    local = ROOT / "tests" / "bench" / "eval"
    return [
        QuerySet("techdocs-dev", "techdocs", evals / "techdocs-dev.jsonl", "all", True),
        QuerySet("scifact-tuning", "scifact", evals / "scifact-train.jsonl", "even", True),
        QuerySet("keps-dev", "keps", local / "keps-dev.jsonl", "all", True),
        QuerySet("techdocs-validation", "techdocs", _first(evals / "techdocs-validation.jsonl",
                                                           local / "techdocs-validation.jsonl"), "all", False),
        QuerySet("scifact-reporting", "scifact", evals / "scifact-train.jsonl", "odd", False),
        QuerySet("keps-validation", "keps", local / "keps-validation.jsonl", "all", False),
    ]


def _first(*paths: Path) -> Path:
    return next((p for p in paths if p.exists()), paths[-1])


# -- capture ------------------------------------------------------------------------------------


class FuseRecorder:
    """Wraps ``search._fuse`` for the benchmark: records its inputs, then runs the real thing."""

    def __init__(self) -> None:
        self.original = search._fuse
        self.last: dict[str, Any] | None = None

    def __enter__(self) -> FuseRecorder:
        search._fuse = self._record
        return self

    def __exit__(self, *exc_info: object) -> None:
        search._fuse = self.original

    def _record(self, conn, ws, rankings, lexical_scores, cosines, query, options):  # noqa: ANN001, ANN202
        union = sorted({c for ids in rankings.values() for c in ids})
        rows = search._load_rows(conn, union)
        most_inbound = conn.execute("SELECT COALESCE(MAX(inbound_links), 0) FROM documents WHERE ws_id = ?",
                                    (ws.id,)).fetchone()[0]
        words = set(query.words) | {f.value.lower() for f in query.facets if f.field == "tag" and not f.negated}
        self.last = {
            "rankings": {name: list(ids) for name, ids in rankings.items()},
            "bm25": {str(c): lexical_scores[c] for c in union if c in lexical_scores},
            "cosines": {str(c): cosines[c] for c in union if c in cosines},
            # doc_id, path, tags (JSON), inbound links, successor id, status, kind
            "rows": {str(c): [r[1], r[2], r[9], r[10], r[11], r[12], r[14]] for c, r in rows.items()},
            "most_inbound": most_inbound,
            "words": sorted(words),
            "abstract_chunk": options.abstract_chunk,
            "demote_superseded": options.demote_superseded,
        }
        return self.original(conn, ws, rankings, lexical_scores, cosines, query, options)


def capture(engine: Engine, workspace: str, queries: list[dict]) -> list[dict]:
    fusion = engine._workspace(workspace).option("fusion")
    records = []
    with FuseRecorder() as recorder:
        for q in queries:
            runs = {}
            for label, stages in (("lexical", ["lexical"]), ("semantic", ["semantic"]),
                                  ("hybrid", ["lexical", "semantic"])):
                recorder.last = None
                answer = engine.search_query(workspace, q["query"], search_options(q, {"stages": stages}))
                runs[label] = {"docs": documents_in_order(answer["hits"]), "ms": answer["timing"]["total"],
                               "fuse_ms": answer["timing"].get("fuse", 0.0),
                               "performed": answer["stages"]["performed"]}
            records.append({"id": q["id"], "kind": q["kind"], "relevant": q["relevant"], "runs": runs,
                            "fusion_at_capture": fusion, "fuse_inputs": recorder.last})
    return records


def cached_records(engine: Engine, qset: QuerySet, cache_dir: Path, refresh: bool) -> list[dict]:
    cache = cache_dir / f"fusion-{qset.name}.json"
    queries = qset.load()
    if cache.exists() and not refresh:
        records = json.loads(cache.read_text())
        if [r["id"] for r in records] == [q["id"] for q in queries]:
            return records
    records = capture(engine, qset.workspace, queries)
    cache.write_text(json.dumps(records))
    return records


# -- offline replay -----------------------------------------------------------------------------


@dataclass
class Inputs:
    rankings: dict[str, list[int]]
    bm25: dict[int, float]
    cosines: dict[int, float]
    doc_of: dict[int, int]


FusionFn = Callable[[Inputs], list[fuse.Fused]]


def inputs_of(record: dict) -> Inputs:
    raw = record["fuse_inputs"]
    return Inputs(
        rankings={name: list(ids) for name, ids in raw["rankings"].items()},
        bm25={int(c): s for c, s in raw["bm25"].items()},
        cosines={int(c): s for c, s in raw["cosines"].items()},
        doc_of={int(c): row[0] for c, row in raw["rows"].items()},
    )


def replay(record: dict, fusion: FusionFn, limit: int = 50) -> list[str]:
    """The documents, in order, that ``search._fuse`` and ``_finish`` give with ``fusion`` in place of the
    product's fusion: the same boosts, leaders, cap and demotion."""
    raw = record["fuse_inputs"]
    if raw is None:  # no hybrid fusion ran (e.g. a facet-only query): hybrid is what the engine gave
        return record["runs"]["hybrid"]["docs"]
    rows = {int(c): row for c, row in raw["rows"].items()}
    inputs = record.setdefault("_inputs", inputs_of(record))
    fused = [f for f in fusion(inputs) if f.chunk_id in rows
             and (raw["abstract_chunk"] or rows[f.chunk_id][6] != "abstract")]
    fused = fuse.apply_boosts(fused, {f.chunk_id: json.loads(rows[f.chunk_id][2]) for f in fused},
                              {f.chunk_id: rows[f.chunk_id][3] for f in fused}, raw["most_inbound"],
                              set(raw["words"]))
    fused = fuse.keep_leaders(fused, {name: ids for name, ids in inputs.rankings.items() if ids})
    candidates = []
    for f in fused:
        doc_id, path, _tags, _inbound, successor_id, status, _kind = rows[f.chunk_id]
        superseded = status == "superseded" or successor_id is not None
        candidates.append(shape.Candidate({"path": path}, doc_id, successor_id, superseded))
    candidates = shape.cap_per_document(candidates)
    if raw["demote_superseded"]:
        candidates = shape.demote_superseded(candidates)
    return documents_in_order([c.hit for c in candidates[:limit]])


# -- fusions tried --------------------------------------------------------------------------------


def _entries(inputs: Inputs) -> dict[int, fuse.Fused]:
    entries: dict[int, fuse.Fused] = {}
    for name, ids in inputs.rankings.items():
        for chunk_id in ids:
            entries.setdefault(chunk_id, fuse.Fused(chunk_id, 0.0, 0.0)).via.append(name)
    return entries


def _sorted(entries: dict[int, fuse.Fused]) -> list[fuse.Fused]:
    return sorted(entries.values(), key=lambda e: -e.score)


def current(weight: float = 0.4) -> FusionFn:
    """What the product did before this work: the linear blend, RRF when the symbol retriever ran."""
    def run(inputs: Inputs) -> list[fuse.Fused]:
        if "semantic" in inputs.rankings and "symbol" not in inputs.rankings:
            return fuse.linear(inputs.rankings, inputs.bm25, inputs.cosines, weight)
        return fuse.rrf(inputs.rankings)
    return run


def rrf(k: float) -> FusionFn:
    return lambda inputs: fuse.rrf(inputs.rankings, k)


def lexical_scale(inputs: Inputs, how: str) -> dict[int, float]:
    """BM25 on 0..1 over the lexical candidates ("max": divided by the best; "minmax")."""
    values = [inputs.bm25[c] for c in inputs.rankings.get("lexical", []) if c in inputs.bm25]
    if not values:
        return {}
    top, low = max(values), (min(values) if how == "minmax" else 0.0)
    span = (top - low) or 1.0
    return {c: (inputs.bm25[c] - low) / span for c in inputs.rankings.get("lexical", []) if c in inputs.bm25}


def semantic_scale(inputs: Inputs, how: str, entries: dict[int, fuse.Fused]) -> dict[int, float]:
    """Cosines on 0..1 over the query's candidates ("raw": the cosine itself; "minmax"; "z": z-scores)."""
    known = {c: inputs.cosines[c] for c in entries if c in inputs.cosines}
    if not known or how == "raw":
        return {c: max(v, 0.0) for c, v in known.items()}
    values = list(known.values())
    if how == "minmax":
        low, span = min(values), (max(values) - min(values)) or 1.0
        return {c: (v - low) / span for c, v in known.items()}
    mean, spread = statistics.fmean(values), statistics.pstdev(values) or 1.0
    return {c: (v - mean) / spread for c, v in known.items()}


def _z(scores: dict[int, float]) -> dict[int, float]:
    if not scores:
        return {}
    mean, spread = statistics.fmean(scores.values()), statistics.pstdev(scores.values()) or 1.0
    return {c: (v - mean) / spread for c, v in scores.items()}


def chunk_blend(inputs: Inputs, entries: dict[int, fuse.Fused], weight: float, lex: str, sem: str,
                consensus: float) -> dict[int, float]:
    if lex == "z":
        raw = _z({c: inputs.bm25[c] for c in inputs.rankings.get("lexical", []) if c in inputs.bm25})
        floor = min(raw.values(), default=0.0)
        lexical = {c: raw.get(c, floor) for c in entries}
    else:
        lexical = lexical_scale(inputs, lex)
    semantic = semantic_scale(inputs, sem, entries)
    sem_floor = min(semantic.values(), default=0.0) if sem == "z" else 0.0
    blend = {}
    for chunk_id, entry in entries.items():
        value = weight * lexical.get(chunk_id, 0.0) + (1 - weight) * semantic.get(chunk_id, sem_floor)
        blend[chunk_id] = value + (consensus if len(entry.via) > 1 else 0.0)
    return blend


def linear_variant(weight: float, lex: str = "max", sem: str = "minmax", consensus: float = 0.0,
                   symbol_k: float | None = 60) -> FusionFn:
    """A score blend; the symbol retriever (no score) adds 1/(k+rank) scaled to 0..1, or falls back to RRF."""
    def run(inputs: Inputs) -> list[fuse.Fused]:
        if "symbol" in inputs.rankings and symbol_k is None:
            return fuse.rrf(inputs.rankings)
        entries = _entries(inputs)
        blend = chunk_blend(inputs, entries, weight, lex, sem, consensus)
        for chunk_id, entry in entries.items():
            entry.score = blend[chunk_id] + _symbol_term(inputs, chunk_id, symbol_k)
        return _sorted(entries)
    return run


def _symbol_term(inputs: Inputs, chunk_id: int, k: float | None) -> float:
    ids = inputs.rankings.get("symbol")
    if not ids or k is None or chunk_id not in ids:
        return 0.0
    return (k + 1) / (k + 1 + ids.index(chunk_id))


def document_agreement(weight: float, beta: float, sem: str = "minmax", lex: str = "max",
                       consensus: float = 0.0, symbol_k: float | None = 60) -> FusionFn:
    """Chunk blend + beta * the document's blend, where a document's side is its best chunk on that side:
    lexical finding one section and semantic another still agree on the document."""
    def run(inputs: Inputs) -> list[fuse.Fused]:
        if "symbol" in inputs.rankings and symbol_k is None:
            return fuse.rrf(inputs.rankings)
        entries = _entries(inputs)
        lexical = lexical_scale(inputs, lex) if lex != "z" else _z(
            {c: inputs.bm25[c] for c in inputs.rankings.get("lexical", []) if c in inputs.bm25})
        semantic = semantic_scale(inputs, sem, entries)
        blend = chunk_blend(inputs, entries, weight, lex, sem, consensus)
        best_lex: dict[int, float] = {}
        best_sem: dict[int, float] = {}
        for chunk_id in entries:
            doc = inputs.doc_of.get(chunk_id, -chunk_id)
            if chunk_id in lexical:
                best_lex[doc] = max(best_lex.get(doc, -math.inf), lexical[chunk_id])
            if chunk_id in semantic and chunk_id in inputs.rankings.get("semantic", []):
                best_sem[doc] = max(best_sem.get(doc, -math.inf), semantic[chunk_id])
        for chunk_id, entry in entries.items():
            doc = inputs.doc_of.get(chunk_id, -chunk_id)
            doc_score = weight * best_lex.get(doc, 0.0) + (1 - weight) * best_sem.get(doc, 0.0)
            entry.score = blend[chunk_id] + beta * doc_score + _symbol_term(inputs, chunk_id, symbol_k)
        return _sorted(entries)
    return run


def document_rrf(k: float, beta: float) -> FusionFn:
    """Chunk RRF + beta * document RRF (a document's rank in each list is its best chunk's)."""
    def run(inputs: Inputs) -> list[fuse.Fused]:
        entries = _entries(inputs)
        doc_score: dict[int, float] = {}
        for ids in inputs.rankings.values():
            seen: set[int] = set()
            for rank, chunk_id in enumerate(ids, start=1):
                entries[chunk_id].score += 1.0 / (k + rank)
                doc = inputs.doc_of.get(chunk_id, -chunk_id)
                if doc not in seen:
                    seen.add(doc)
                    doc_score[doc] = doc_score.get(doc, 0.0) + 1.0 / (k + len(seen))
        for chunk_id, entry in entries.items():
            entry.score += beta * doc_score[inputs.doc_of.get(chunk_id, -chunk_id)]
        return _sorted(entries)
    return run


def candidates() -> dict[str, FusionFn]:
    tried: dict[str, FusionFn] = {"current: linear w=0.4 + consensus 0.02": current()}
    for k in (5, 10, 20, 30, 60, 100):
        tried[f"RRF k={k}"] = rrf(k)
    for w in (0.3, 0.4, 0.5, 0.6):
        tried[f"linear w={w}, cosine min-max"] = linear_variant(w, sem="minmax")
        tried[f"linear w={w}, both min-max"] = linear_variant(w, lex="minmax", sem="minmax")
        tried[f"linear w={w}, z-scores"] = linear_variant(w, lex="z", sem="z")
    for k in (10, 30, 60):
        for beta in (0.5, 1.0, 2.0):
            tried[f"document RRF k={k} beta={beta}"] = document_rrf(k, beta)
    for w in (0.3, 0.4, 0.5, 0.6):
        for beta in (0.25, 0.5, 1.0):
            tried[f"document agreement w={w} beta={beta}, cosine min-max"] = document_agreement(w, beta)
            tried[f"document agreement w={w} beta={beta}, raw cosine"] = document_agreement(w, beta, sem="raw")
    return tried


# -- evaluation -----------------------------------------------------------------------------------


def scores(ranked: list[list[str]], records: list[dict]) -> dict[str, float]:
    n = len(records) or 1
    return {
        "r3": sum(recall_at(r, set(x["relevant"]), 3) for r, x in zip(ranked, records, strict=True)) / n,
        "ndcg10": sum(ndcg_at_10(r, set(x["relevant"])) for r, x in zip(ranked, records, strict=True)) / n,
    }


def by_kind(ranked: list[list[str]], records: list[dict]) -> dict[str, dict[str, float]]:
    groups = {"all": list(range(len(records)))}
    for i, record in enumerate(records):
        groups.setdefault(record["kind"], []).append(i)
    return {kind: {**scores([ranked[i] for i in idx], [records[i] for i in idx]), "n": len(idx)}
            for kind, idx in groups.items()}


def baselines(records: list[dict]) -> dict[str, dict[str, dict[str, float]]]:
    return {label: by_kind([r["runs"][label]["docs"] for r in records], records)
            for label in ("lexical", "semantic", "hybrid")}


def shortfalls(hybrid: dict[str, dict[str, float]], base: dict[str, dict[str, dict[str, float]]]) -> float:
    """How far hybrid is below the better retriever, summed over kinds and both measures (0: target met)."""
    total = 0.0
    for kind, values in hybrid.items():
        for measure in ("r3", "ndcg10"):
            better = max(base["lexical"][kind][measure], base["semantic"][kind][measure])
            total += max(0.0, better - values[measure] + 1e-9) * (1 if kind != "all" else 2)
    return total


def evaluate(sets: dict[str, list[dict]], tried: dict[str, FusionFn]) -> dict[str, dict[str, dict]]:
    return {label: {name: by_kind([replay(r, fn) for r in records], records) for name, records in sets.items()}
            for label, fn in tried.items()}


def choose(results: dict[str, dict[str, dict]], bases: dict[str, dict]) -> list[tuple[str, float, float]]:
    """Fusions by the summed shortfall on the tuning sets, then by mean nDCG@10 + R@3 over the sets."""
    ranked = []
    for label, per_set in results.items():
        short = sum(shortfalls(per_set[name], bases[name]) for name in per_set)
        mean = statistics.fmean(v["all"]["ndcg10"] + v["all"]["r3"] for v in per_set.values())
        ranked.append((label, short, mean))
    return sorted(ranked, key=lambda x: (round(x[1], 6), -x[2]))


# -- report ---------------------------------------------------------------------------------------


def table(name: str, base: dict[str, dict], hybrid: dict[str, dict], hybrid_label: str) -> list[str]:
    lines = [f"### {name}", "", "| kind | queries | lexical R@3 | semantic R@3 | hybrid R@3 | lexical nDCG@10 | "
             "semantic nDCG@10 | hybrid nDCG@10 |", "|---|---|---|---|---|---|---|---|"]
    kinds = ["all", *sorted(k for k in hybrid if k != "all")]
    for kind in kinds:
        cells = []
        for measure in ("r3", "ndcg10"):
            lex, sem, hyb = base["lexical"][kind][measure], base["semantic"][kind][measure], hybrid[kind][measure]
            mark = "" if hyb + 1e-9 >= max(lex, sem) else " ▼"
            cells += [f"{lex:.3f}", f"{sem:.3f}", f"**{hyb:.3f}**{mark}"]
        lines.append(f"| {kind} | {hybrid[kind]['n']} | " + " | ".join(cells) + " |")
    return lines + ["", f"hybrid = {hybrid_label}; ▼ = below the better of lexical and semantic.", ""]


def latency_line(records: list[dict]) -> str:
    ms = [r["runs"]["hybrid"]["ms"] for r in records]
    return f"hybrid `search.query` in-process median {statistics.median(ms):.2f} ms over {len(ms)} queries"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--db", help="an indexed and embedded database with workspaces scifact, techdocs, keps")
    parser.add_argument("--cache", help="folder for the captured candidates (default: next to --db)")
    parser.add_argument("--refresh", action="store_true", help="capture again even when a cache exists")
    parser.add_argument("--report", action="store_true", help="also evaluate the reporting sets")
    parser.add_argument("--sets", help="comma-separated set names (default: every tuning set, with --report all)")
    parser.add_argument("--out", default="doc/benchmarks/fusion.md")
    args = parser.parse_args()
    shared = Path(args.shared).resolve()
    work = None if args.db else Path(tempfile.mkdtemp(prefix="autodoc-fusion-"))
    db = Path(args.db) if args.db else work / "bench.db"
    cache_dir = Path(args.cache) if args.cache else db.parent
    engine = Engine(db)
    try:
        if work is not None:
            build(engine, shared)
        sets = [s for s in query_sets(shared) if (s.tuning or args.report)
                and (not args.sets or s.name in args.sets.split(","))]
        missing = [s.name for s in sets if not s.path.exists()]
        sets = [s for s in sets if s.path.exists()]
        records = {s.name: cached_records(engine, s, cache_dir, args.refresh) for s in sets}
    finally:
        engine.close()
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    lines = report(sets, records, missing)
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def build(engine: Engine, shared: Path) -> None:
    for name in CORPORA:
        engine.workspace_add(name, str(shared / "data" / name / "docs"))
        engine.workspace_index(name, {"wait": "semantic"})


def report(sets: list[QuerySet], records: dict[str, list[dict]], missing: list[str]) -> list[str]:
    tried = candidates()
    tuning = {s.name: records[s.name] for s in sets if s.tuning}
    bases = {name: baselines(recs) for name, recs in records.items()}
    results = evaluate(tuning, tried)
    ranking = choose(results, {name: bases[name] for name in tuning})
    chosen = ranking[0][0]
    lines = ["# Fusion benchmark", "", f"Made by `python -m tests.bench.fusion` on {time.strftime('%Y-%m-%d')}. "
             "Document-level Recall@3 and nDCG@10; lexical and semantic are the engine's own single-stage "
             "answers, hybrid the chosen fusion replayed on the captured candidates.", ""]
    if missing:
        lines += [f"Query sets not found (skipped): {', '.join(missing)}.", ""]
    lines += ["## Per set and kind", ""]
    for qset in sets:
        hybrid = results.get(chosen, {}).get(qset.name) or by_kind(
            [replay(r, tried[chosen]) for r in records[qset.name]], records[qset.name])
        role = "tuning" if qset.tuning else "reporting"
        lines += table(f"{qset.name} ({role})", bases[qset.name], hybrid, chosen)
        lines += [latency_line(records[qset.name]) + ".", ""]
    lines += ["## Fusions tried (tuning sets)", "",
              "shortfall = how far below the better retriever, summed over kinds and measures (0 = target met).",
              "", "| fusion | shortfall | " + " | ".join(f"{n} R@3 | {n} nDCG@10" for n in tuning) + " |",
              "|---|---|" + "---|---|" * len(tuning)]
    for label, short, _mean in ranking:
        cells = " | ".join(f"{results[label][n]['all']['r3']:.3f} | {results[label][n]['all']['ndcg10']:.3f}"
                           for n in tuning)
        lines.append(f"| {label} | {short:.3f} | {cells} |")
    agree = sum(replay(r, current()) == r["runs"]["hybrid"]["docs"] for recs in records.values() for r in recs
                if r.get("fusion_at_capture") == "linear")
    total = sum(1 for recs in records.values() for r in recs if r.get("fusion_at_capture") == "linear")
    lines += ["", f"Replay check: the current fusion replayed gives the engine's own hybrid answer on {agree} of "
              f"{total} queries captured with it."]
    return lines


if __name__ == "__main__":
    main()
