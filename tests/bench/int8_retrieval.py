"""One-off (issue 43, not in ``make bench``): do int8 graphs of the local encoder keep retrieval within 0.005 of
fp32? Dense retrieval only, at the document level: every chunk text of SciFact and techdocs (as the indexer
embeds them) and every eval query are embedded by each graph; a document scores the best cosine of its chunks.
Document nDCG@10 and R@3 per corpus and graph, and each graph's texts/s on the same texts, blocks interleaved.

    nice -n 10 .venv/bin/python -m tests.bench.int8_retrieval --shared ../shared \\
        --out doc/benchmarks/int8-retrieval.md

It embeds about 15,800 chunk texts per graph (35 minutes for three graphs on the loaded machine, 2026-12-06).
"""

from __future__ import annotations

import autodoc_core  # noqa: F401 - before numpy: one BLAS thread per calling thread, as in the product

# isort: split
import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from autodoc_core.providers.minilm import default_model_dir
from autodoc_core.providers.onnx_encoder import OnnxEncoder, _session, graph_path
from tests.bench.encoder import corpus_chunks
from tests.bench.retrieval import load_queries, quality

TOLERANCE = 0.005
BLOCK = 512  # chunk texts per interleaved block
LIMIT = int(os.environ.get("INT8_RETRIEVAL_LIMIT", "0"))  # first N chunk texts only: a smoke run
FEED_FORWARD_UP = "intermediate_dense_weight"
FEED_FORWARD_DOWN = "_output_dense_weight"  # encoder_layer_N_output_dense_weight, not attention_output_dense
# name: (weight initialisers whose MatMul turns int8, reduce range)
VARIANTS: dict[str, tuple[tuple[str, ...], bool]] = {
    "ffn-int8": ((FEED_FORWARD_UP, FEED_FORWARD_DOWN), False),
    "ffn-up-int8-rr": ((FEED_FORWARD_UP,), True),
}
LABELS = {"fp32": "fp32 (the product's graph)",
          "ffn-int8": "feed-forward MatMuls int8 (per channel)",
          "ffn-up-int8-rr": "feed-forward up-projection only int8, reduce range (per channel)"}
CORPORA = {"scifact": "scifact-train", "techdocs": "techdocs-dev"}


@dataclass
class Graph:
    name: str
    encoder: OnnxEncoder
    seconds: float = 0.0
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    deltas: list[tuple[float, float]] = field(default_factory=list)  # |nDCG@10|, |R@3| vs fp32, per corpus


def quantized_graph(fp32: Path, out: Path, weights: tuple[str, ...], reduce_range: bool) -> Path:
    """``quantize_dynamic`` of the MatMuls whose weight initialiser's name contains one of ``weights``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = onnx.load(str(fp32))
    initialisers = {i.name for i in model.graph.initializer}
    nodes = [n.name for n in model.graph.node if n.op_type == "MatMul" and any(
        i in initialisers and any(w in i and "attention" not in i for w in weights) for i in n.input)]
    quantize_dynamic(str(fp32), str(out), per_channel=True, reduce_range=reduce_range,
                     weight_type=QuantType.QInt8, nodes_to_quantize=nodes)
    print(f"{out.name}: {len(nodes)} MatMuls int8", file=sys.stderr, flush=True)
    return out


def open_graphs(folder: Path, names: list[str], workers: int) -> list[Graph]:
    model_dir = default_model_dir()
    fp32 = OnnxEncoder(model_dir)
    graphs = [Graph("fp32", fp32)]
    for name in names:
        weights, reduce_range = VARIANTS[name]
        encoder = OnnxEncoder(model_dir)
        encoder.session = _session(str(quantized_graph(graph_path(model_dir), folder / f"{name}.onnx", weights,
                                                       reduce_range)))
        graphs.append(Graph(name, encoder))
    return graphs


def embed_interleaved(graphs: list[Graph], texts: list[str], corpus: str, workers: int) -> None:
    """Every graph embeds the same blocks; the order of graphs turns each block, so none always runs first."""
    rows: dict[str, list[np.ndarray]] = {g.name: [] for g in graphs}
    for graph in graphs:  # a session's first runs are slow: not counted
        graph.encoder.embed(texts[:32], workers=workers)
    for number, start in enumerate(range(0, len(texts), BLOCK)):
        block = texts[start : start + BLOCK]
        turn = number % len(graphs)
        for graph in graphs[turn:] + graphs[:turn]:
            started = time.perf_counter()
            rows[graph.name].append(graph.encoder.embed(block, workers=workers))
            graph.seconds += time.perf_counter() - started
        print(f"{corpus}: {start + len(block)}/{len(texts)} at {time.strftime('%H:%M:%S')}, load "
              f"{os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    for graph in graphs:
        graph.vectors[corpus] = np.vstack(rows[graph.name])


def ranked_documents(queries: np.ndarray, chunks: np.ndarray, paths: list[str], depth: int = 10) -> list[list[str]]:
    """Documents by the best cosine of their chunks (a document's chunks are consecutive in ``paths``)."""
    starts = [i for i, path in enumerate(paths) if i == 0 or path != paths[i - 1]]
    documents = [paths[i] for i in starts]
    scores = np.maximum.reduceat(queries @ chunks.T, starts, axis=1)
    top = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
    return [[documents[i] for i in row] for row in top]


def cosine_line(ours: np.ndarray, reference: np.ndarray) -> str:
    cosines = (ours * reference).sum(axis=1)
    return f"{cosines.min():.4f} / {np.median(cosines):.5f}"


def corpus_rows(graphs: list[Graph], corpus: str, shared: Path, workers: int) -> list[str]:
    chunks = list(corpus_chunks(shared / "data" / corpus / "docs"))[:LIMIT or None]
    paths, texts = [p for p, _ in chunks], [t for _, t in chunks]
    queries = load_queries(shared / "eval" / f"{CORPORA[corpus]}.jsonl")
    embed_interleaved(graphs, texts, corpus, workers)
    reference = graphs[0]
    results = {}
    for graph in graphs:
        query_vectors = graph.encoder.embed([q["query"] for q in queries])
        graph.vectors[corpus + ":queries"] = query_vectors
        results[graph.name] = quality(ranked_documents(query_vectors, graph.vectors[corpus], paths), queries)
    base = results["fp32"]
    rows = []
    for graph in graphs:
        got = results[graph.name]
        d_ndcg, d_r3 = got["ndcg10"] - base["ndcg10"], got["r3"] - base["r3"]
        agreement = "" if graph is reference else (
            f"{cosine_line(graph.vectors[corpus], reference.vectors[corpus])} | "
            f"{cosine_line(graph.vectors[corpus + ':queries'], reference.vectors[corpus + ':queries'])}")
        rows.append(f"| {corpus} ({len(texts)} chunks, {len(set(paths))} docs, {len(queries)} queries) "
                    f"| {graph.name} | {got['ndcg10']:.4f} | {d_ndcg:+.4f} | {got['r3']:.4f} | {d_r3:+.4f} "
                    f"| {agreement or '-- | --'} |")
        graph.deltas.append((abs(d_ndcg), abs(d_r3)))
    return rows


def verdicts(graphs: list[Graph], corpora: list[str]) -> list[str]:
    lines = []
    for graph in graphs[1:]:
        worst = max(max(pair) for pair in graph.deltas)
        if worst > TOLERANCE:
            verdict = f"NOT within {TOLERANCE} of fp32."
        elif len(graph.deltas) < len(CORPORA):
            verdict = f"within {TOLERANCE} so far; {', '.join(c for c in CORPORA if c not in corpora)} not measured."
        else:
            verdict = f"within {TOLERANCE} of fp32 on both corpora and both metrics."
        lines.append(f"- {LABELS[graph.name]}: largest difference {worst:.4f} ({', '.join(corpora)}): {verdict}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--out", default="doc/benchmarks/int8-retrieval.md")
    parser.add_argument("--graphs", default="ffn-int8,ffn-up-int8-rr", help=f"of {', '.join(VARIANTS)}")
    parser.add_argument("--corpora", default="scifact,techdocs")
    parser.add_argument("--workers", type=int, default=2, help="threads per graph for the chunk texts")
    args = parser.parse_args()
    shared, corpora = Path(args.shared), args.corpora.split(",")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        graphs = open_graphs(Path(folder), args.graphs.split(","), args.workers)
        rows: list[str] = []
        texts = 0
        for corpus in corpora:
            rows += corpus_rows(graphs, corpus, shared, args.workers)
            texts += len(graphs[0].vectors[corpus])
            write(args.out, graphs, rows, corpora[: corpora.index(corpus) + 1], texts, load_before, args.workers)


def write(out: str, graphs: list[Graph], rows: list[str], corpora: list[str], texts: int,
          load_before: tuple[float, float, float], workers: int) -> None:
    load_after = os.getloadavg()
    speeds = ", ".join(f"{g.name} {texts / g.seconds:.1f}" for g in graphs)
    fp32 = graphs[0].seconds
    ratios = ", ".join(f"{g.name} {fp32 / g.seconds:.2f}x" for g in graphs[1:])
    lines = ["# int8 graphs of the local encoder, judged by retrieval (issue 43)", "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `tests/bench/int8_retrieval.py` "
             f"(one-off, not in `make bench`), `nice -n 10`, onnxruntime one intra-op thread per session, {workers} "
             f"threads per graph for the chunk texts; load average (1/5/15 min) "
             f"{'/'.join(f'{x:.2f}' for x in load_before)} before, {'/'.join(f'{x:.2f}' for x in load_after)} after.",
             "",
             "Dense retrieval only, at the document level: every chunk text of the corpus (breadcrumb, then body, "
             "as the indexer embeds them) and every eval query embedded by each graph, a document scored by the "
             "best cosine of its chunks. Facet filters of the eval queries are not applied (the same for every "
             "graph). Cosine to fp32 = min / median over the same texts.", "",
             "| corpus | graph | nDCG@10 | vs fp32 | R@3 | vs fp32 | corpus cosine to fp32 | query cosine to fp32 |",
             "|---|---|---|---|---|---|---|---|", *rows, "",
             f"Chunk texts/s on the same {texts} texts, blocks of {BLOCK} interleaved (the order of graphs turns each "
             f"block): {speeds}; speed-up over fp32: {ratios}.", "",
             "Graphs (`onnxruntime.quantization.quantize_dynamic`, int8 weights, per channel, uint8 activations):", "",
             *(f"- {g.name}: {LABELS[g.name]}" for g in graphs), "",
             f"## Verdict (tolerance {TOLERANCE} on document nDCG@10 and R@3, both corpora)", "",
             *verdicts(graphs, corpora)]
    Path(out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
