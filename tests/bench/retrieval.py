"""``make bench``: retrieval quality, indexing time and query latency on the shared corpora.

Writes ``doc/benchmarks/kb-retrieval.md``. The peer measured in the same run is plain FTS5 BM25
(one column, no field weights, OR of the query's words) over the same chunks, the way a BM25-only
note search does it; "AND of all words" shows how a peer that ANDs every word fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import apsw

from autodoc_core.retrieve.query import fts_tokens
from autodoc_core.service.engine import Engine

ROOT = Path(__file__).resolve().parents[2]


def load_queries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def ndcg_at_10(ranked: list[str], relevant: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:10]) if doc in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), 10)))
    return dcg / ideal if ideal else 0.0


def recall_at(ranked: list[str], relevant: set[str], k: int) -> float:
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def documents_in_order(hits: list[dict]) -> list[str]:
    return list(dict.fromkeys(hit["path"] for hit in hits))


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile; NaN for no values (a table cell, not a crash)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def quality(ranked_lists: list[list[str]], queries: list[dict]) -> dict[str, float]:
    rel = [set(q["relevant"]) for q in queries]
    n = len(queries)
    return {
        "ndcg10": sum(ndcg_at_10(r, g) for r, g in zip(ranked_lists, rel, strict=True)) / n,
        "r3": sum(recall_at(r, g, 3) for r, g in zip(ranked_lists, rel, strict=True)) / n,
        "r10": sum(recall_at(r, g, 10) for r, g in zip(ranked_lists, rel, strict=True)) / n,
    }


class Peer:
    """Plain FTS5 BM25 over the same chunk texts, one column, no weights, no stopword handling."""

    def __init__(self, db: Path, ws_id: int) -> None:
        self.conn = apsw.Connection(":memory:")
        self.conn.execute("CREATE VIRTUAL TABLE peer USING fts5(text, path UNINDEXED, tokenize='porter unicode61')")
        source = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        rows = source.execute(
            "SELECT c.breadcrumb || char(10) || c.body, d.path FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE c.ws_id = ?", (ws_id,))
        with self.conn:
            self.conn.executemany("INSERT INTO peer(text, path) VALUES (?, ?)", rows)
        source.close()

    def search(self, query: str, operator: str, paths: set[str] | None = None) -> list[str]:
        """Ranked documents; ``paths`` (the query's facet filter, as files) narrows the match first."""
        words = fts_tokens(query)
        if not words:
            return []
        match = f" {operator} ".join('"' + w + '"' for w in words)
        where = "" if paths is None else f" AND path IN ({', '.join('?' * len(paths))})"
        rows = self.conn.execute(f"SELECT path FROM peer WHERE peer MATCH ?{where} ORDER BY rank LIMIT 50",
                                 (match, *sorted(paths or ())))
        return list(dict.fromkeys(r[0] for r in rows))


def search_options(query: dict, opts: dict) -> dict:
    """The engine's options for an eval query: a facet query's ``facets`` are its filter (they
    narrow the search to the right product, as the dataset's README says)."""
    return {**opts, "limit": 50, **({"facets": query["facets"]} if query.get("facets") else {})}


def facet_paths(engine: Engine, name: str, query: dict) -> set[str] | None:
    """The files a facet query's filter admits (what the peer is given, so both search the same set)."""
    if not query.get("facets"):
        return None
    listed = engine.search_query(name, "", {"facets": query["facets"], "limit": 200}).to_wire()["hits"]
    if len(listed) == 200:
        raise RuntimeError(f"the facets of {query['id']} admit 200 files or more: the peer's filter would be cut")
    return {hit["path"] for hit in listed}


def timed_index(engine: Engine, name: str, root: Path) -> dict:
    engine.workspace_add(name, str(root))
    started = time.perf_counter()
    report = engine.workspace_index(name)
    return {"seconds": time.perf_counter() - started, "documents": report["added"], "chunks": report["chunks_written"]}


def eval_engine(engine: Engine, name: str, queries: list[dict], opts: dict) -> list[list[str]]:
    return [documents_in_order(engine.search_query(name, q["query"], search_options(q, opts)).to_wire()["hits"])
            for q in queries]


def section_hit_at_3(engine: Engine, name: str, queries: list[dict]) -> tuple[int, int]:
    """Queries with a labelled section: how many have that section's chunk in the top 3 hits."""
    labelled = [q for q in queries if q.get("section")]
    found = 0
    for q in labelled:
        hits = engine.search_query(name, q["query"], {"limit": 3, "stages": ["lexical"]}).to_wire()["hits"]
        target = q["section"].lower()
        if any(h["path"] == q["relevant"][0] and target in h["breadcrumb"].lower() for h in hits):
            found += 1
    return found, len(labelled)


def symbol_recall(engine: Engine, name: str, queries: list[dict]) -> list[str]:
    """Recall@1/@3 of identifier queries, lexical stage, with and without the symbol retriever."""
    lines = ["", f"### Identifier queries ({name}, {len(queries)} of kind identifier, lexical stage)", "",
             "| symbol retriever | R@1 | R@3 | ran on |", "|---|---|---|---|"]
    for enabled in (False, True):
        r1 = r3 = ran = 0.0
        for q in queries:
            answer = engine.search_query(name, q["query"], {"stages": ["lexical"], "limit": 20,
                                                            "retrieval": {"symbol": enabled}}).to_wire()
            ranked, relevant = documents_in_order(answer["hits"]), set(q["relevant"])
            r1 += recall_at(ranked, relevant, 1)
            r3 += recall_at(ranked, relevant, 3)
            ran += "symbol" in answer["stages"]["performed"]
        count = len(queries) or 1
        lines.append(f"| {'on' if enabled else 'off'} | {r1 / count:.3f} | {r3 / count:.3f} | "
                     f"{int(ran)} of {len(queries)} queries |")
    return lines


def stdio_latency(db: Path, name: str, queries: list[str], rounds: int = 1,
                  stages: tuple[str, ...] = ("lexical",)) -> list[float]:
    """Round trips of search.query through ``autodoc serve --stdio``, in milliseconds."""
    process = subprocess.Popen(
        [sys.executable, "-m", "autodoc_core", "--db", str(db), "serve", "--stdio"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT,
    )
    assert process.stdin and process.stdout
    timings = []
    for number, text in enumerate(queries * rounds):
        message = {"jsonrpc": "2.0", "id": number, "method": "search.query",
                   "params": [name, text, {"stages": list(stages), "limit": 10}]}
        started = time.perf_counter()
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        timings.append((time.perf_counter() - started) * 1000)
        if "error" in answer:
            raise RuntimeError(answer["error"])
    process.stdin.close()
    process.wait()
    return timings[len(queries) // 10 :] if rounds == 1 else timings  # drop warm-up


def peer_latency(peer: Peer, queries: list[str]) -> list[float]:
    timings = []
    for text in queries:
        started = time.perf_counter()
        peer.search(text, "OR")
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def replicate(source: Path, target: Path, copies: int) -> None:
    for copy in range(copies):
        folder = target / f"copy{copy:03d}"
        folder.mkdir(parents=True)
        for path in source.iterdir():
            if path.suffix == ".md":
                os.link(path, folder / path.name) if _same_device(source, target) else shutil.copy(path, folder)


def _same_device(a: Path, b: Path) -> bool:
    return os.stat(a).st_dev == os.stat(b).st_dev


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--out", default="doc/benchmarks/kb-retrieval.md")
    parser.add_argument("--scale", type=int, default=50, help="SciFact copies for the growth run (0: skip)")
    parser.add_argument("--no-semantic", dest="semantic", action="store_false", help="skip embedding (long)")
    parser.add_argument("--ranker-url", default=os.environ.get("RANKER_URL", ""),
                        help="a TEI /rerank server (or Cohere-compatible with --ranker-provider cohere)")
    parser.add_argument("--ranker-provider", default=os.environ.get("RANKER_PROVIDER", "tei"))
    parser.add_argument("--ranker-model", default=os.environ.get("RANKER_MODEL", ""))
    parser.add_argument("--st-python", default=os.environ.get("ST_PYTHON", ""),
                        help="a Python with sentence-transformers, for the throughput comparison")
    args = parser.parse_args()
    shared = Path(args.shared).resolve()
    scifact_q = load_queries(shared / "eval" / "scifact-train.jsonl")
    techdocs_q = load_queries(shared / "eval" / "techdocs-dev.jsonl")
    work = Path(tempfile.mkdtemp(prefix="autodoc-bench-"))
    db = work / "bench.db"
    engine = Engine(db)
    lines: list[str] = []
    try:
        index = {
            "scifact": timed_index(engine, "scifact", shared / "data" / "scifact" / "docs"),
            "techdocs": timed_index(engine, "techdocs", shared / "data" / "techdocs" / "docs"),
        }
        rows = []
        for name, queries in (("scifact", scifact_q), ("techdocs", techdocs_q)):
            ours = quality(eval_engine(engine, name, queries, {"stages": ["lexical"]}), queries)
            ws_id = engine._workspace(name).id
            peer = Peer(db, ws_id)
            admitted = [facet_paths(engine, name, q) for q in queries]
            peer_or = quality([peer.search(q["query"], "OR", p) for q, p in zip(queries, admitted, strict=True)],
                              queries)
            and_lists = [peer.search(q["query"], "AND", p) for q, p in zip(queries, admitted, strict=True)]
            peer_and = quality(and_lists, queries)
            empty = sum(1 for r in and_lists if not r)
            rows.append((name, len(queries), ours, peer_or, peer_and, empty))
            if name == "techdocs":
                kinds = sorted({q["kind"] for q in queries})
                per_kind = {}
                for kind in kinds:
                    subset = [q for q in queries if q["kind"] == kind]
                    per_kind[kind] = (len(subset), quality(eval_engine(engine, name, subset, {"stages": ["lexical"]}),
                                                           subset))
                sections = section_hit_at_3(engine, name, queries)
                identifier_rows = symbol_recall(engine, name, [q for q in queries if q["kind"] == "identifier"])
            if name == "scifact":
                texts = [q["query"] for q in queries]
                ours_ms = stdio_latency(db, "scifact", texts)
                peer_ms = peer_latency(peer, texts)
        growth = scale_run(work, shared, args.scale, scifact_q) if args.scale else None
        lines = report(index, rows, per_kind, sections, ours_ms, peer_ms, growth) + identifier_rows
        if args.semantic:
            from tests.bench.semantic import semantic_report

            ranker = ({"provider": args.ranker_provider, "url": args.ranker_url, "model": args.ranker_model or None}
                      if args.ranker_url else None)
            lines += semantic_report(engine, db, {"scifact": scifact_q, "techdocs": techdocs_q}, args.st_python,
                                     ranker)
        from tests.bench.picker import picker_latency

        lines += picker_latency(db, shared / "data" / "scifact" / "docs", [q["query"] for q in scifact_q[:100]],
                                work, hybrid=args.semantic)
    finally:
        engine.close()
        shutil.rmtree(work, ignore_errors=True)
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def scale_run(work: Path, shared: Path, copies: int, queries: list[dict]) -> dict:
    folder = work / "scaled"
    replicate(shared / "data" / "scifact" / "docs", folder, copies)
    db = work / "scaled.db"
    engine = Engine(db)
    try:
        indexed = timed_index(engine, "scaled", folder)
    finally:
        engine.close()
    texts = [q["query"] for q in queries[:300]]
    timings = stdio_latency(db, "scaled", texts)
    return {"copies": copies, **indexed, "median": statistics.median(timings), "p95": percentile(timings, 0.95)}


def _fmt(q: dict) -> str:
    return f"{q['ndcg10']:.3f} | {q['r3']:.3f} | {q['r10']:.3f}"


def report(index, rows, per_kind, sections, ours_ms, peer_ms, growth) -> list[str]:
    lines = [
        "# Retrieval benchmark",
        "",
        f"Made by `make bench` on {time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, SQLite {apsw.sqlite_lib_version()}.",
        "Peer, measured in the same run over the same chunks: plain FTS5 BM25 (one column, no field weights, "
        "query words ORed, stopwords kept); and the AND of all words, as BM25-only note tools do it.",
        "Ranking is by document (a document's best chunk); hits are chunks. The techdocs facet queries carry "
        "their `facets` as the filter (the dataset's intent), for autodoc and the peer alike.",
        "",
        "## Quality",
        "",
        "| corpus | queries | autodoc nDCG@10 | R@3 | R@10 | peer OR nDCG@10 | R@3 | R@10 | "
        "peer AND nDCG@10 | R@3 | R@10 | AND: empty answers |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, count, ours, peer_or, peer_and, empty in rows:
        lines.append(f"| {name} | {count} | {_fmt(ours)} | {_fmt(peer_or)} | {_fmt(peer_and)} | {empty} |")
    lines += ["", "techdocs dev by query kind (autodoc lexical):", "",
              "| kind | queries | nDCG@10 | R@3 | R@10 |", "|---|---|---|---|---|"]
    for kind, (count, q) in per_kind.items():
        lines.append(f"| {kind} | {count} | {q['ndcg10']:.3f} | {q['r3']:.3f} | {q['r10']:.3f} |")
    lines += ["", f"Labelled section of the first relevant file among the top 3 hits: {sections[0]} of {sections[1]}.",
              "", "## Indexing", "", "| corpus | documents | chunks | seconds |", "|---|---|---|---|"]
    for name, item in index.items():
        lines.append(f"| {name} | {item['documents']} | {item['chunks']} | {item['seconds']:.2f} |")
    ours_median, peer_median = statistics.median(ours_ms), statistics.median(peer_ms)
    lines += [
        "", "## Query latency (SciFact train claims, lexical)", "",
        "| what | median ms | p95 ms |", "|---|---|---|",
        f"| autodoc `search.query` over `serve --stdio` (round trip, JSON both ways) | {ours_median:.2f} | "
        f"{percentile(ours_ms, 0.95):.2f} |",
        f"| peer: FTS5 BM25 OR query in-process (no RPC) | {peer_median:.2f} | {percentile(peer_ms, 0.95):.2f} |",
        "", f"Ratio autodoc / peer (medians): {ours_median / peer_median:.2f}.",
    ]
    if growth:
        lines += [
            "", f"## Growth: SciFact replicated {growth['copies']}x", "",
            f"{growth['documents']} documents, {growth['chunks']} chunks, indexed in {growth['seconds']:.1f} s. "
            f"`search.query` over stdio on 300 claims: median {growth['median']:.2f} ms, p95 {growth['p95']:.2f} ms.",
        ]
    return lines


if __name__ == "__main__":
    main()
