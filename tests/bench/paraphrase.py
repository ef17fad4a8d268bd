"""What the README may promise about paraphrases: pairs of queries for one Rust RFC, a paraphrase a new user
typed and the keyword form that names the feature, each searched lexically, semantically and hybrid.

The Rust RFCs are a reporting corpus: nothing was tuned on them, and these pairs (tests/bench/eval/
rfcs-paraphrase.jsonl, labelled by reading the RFCs, written before any run) tune nothing either. A pair is
found when one of its labelled RFCs is among the first three documents of the hits.

    python -m tests.bench.paraphrase --shared ../shared [--db /tmp/paraphrase-bench/rfcs.db]
        [--embedder '{"provider": "openai", "url": "http://127.0.0.1:8080", "model": "..."}']
        [--out doc/benchmarks/paraphrase.md]

The database is kept between runs (embedding the 648 RFCs takes 10 minutes or more on 2 cores). ``--embedder``
measures another model in a workspace of its own (``rfcs-<model>``) beside the default one's.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from autodoc_core.service.engine import Engine
from tests.bench.retrieval import documents_in_order, load_queries

ROOT = Path(__file__).resolve().parents[2]
QUERIES = ROOT / "tests" / "bench" / "eval" / "rfcs-paraphrase.jsonl"
MODES = {"lexical": ["lexical"], "semantic": ["semantic"], "hybrid": ["lexical", "semantic"]}
TOP = 3


@dataclass(frozen=True)
class Outcome:
    """Where a query's first labelled RFC came, in one mode (None: not among the 50 hits asked for)."""
    query: dict[str, Any]
    mode: str
    rank: int | None

    @property
    def found(self) -> bool:
        return self.rank is not None and self.rank <= TOP


@dataclass(frozen=True)
class Prepared:
    workspace: str
    encoder: str
    documents: int
    sections: int
    seconds: float  # 0 when the database already had it indexed and embedded


def prepare(engine: Engine, workspace: str, root: Path, embedder: dict[str, Any] | None) -> Prepared:
    """The RFCs indexed and embedded in ``workspace`` (a run that finds them so only checks)."""
    if workspace not in {ws["name"] for ws in engine.workspace_list()}:
        engine.workspace_add(workspace, str(root))
    if embedder:
        engine.workspace_configure(workspace, {"embedder": embedder})
    started = time.perf_counter()
    engine.workspace_index(workspace, {"wait": "semantic"})
    seconds = time.perf_counter() - started
    status = engine.workspace_status(workspace)
    if status["semantic"] != "ready":
        raise RuntimeError(f"{workspace}: semantic is {status['semantic']!r} after the fill: {status}")
    model = status["embedder"]
    return Prepared(workspace, f"{model['provider']} {model['model']} ({model['dimensions']} dimensions)",
                    status["documents"], status["chunks"], seconds if seconds > 5 else 0.0)


def first_relevant(engine: Engine, workspace: str, query: dict[str, Any], stages: list[str]) -> int | None:
    hits = engine.search_query(workspace, query["query"], {"stages": stages, "limit": 50}).to_wire()["hits"]
    ranked = documents_in_order(hits)
    return next((rank for rank, path in enumerate(ranked, 1) if path in query["relevant"]), None)


def measure(engine: Engine, workspace: str, queries: list[dict[str, Any]]) -> list[Outcome]:
    return [Outcome(q, mode, first_relevant(engine, workspace, q, stages))
            for q in queries for mode, stages in MODES.items()]


def found_count(outcomes: list[Outcome], form: str, mode: str) -> tuple[int, int]:
    chosen = [o for o in outcomes if o.query["form"] == form and o.mode == mode]
    return sum(o.found for o in chosen), len(chosen)


def table(prepared: Prepared, outcomes: list[Outcome], issue_pairs: set[str]) -> list[str]:
    def cell(o: Outcome) -> str:
        return "-" if o.rank is None else (f"**{o.rank}**" if o.found else str(o.rank))

    by_query: dict[str, dict[str, Outcome]] = {}
    for o in outcomes:
        by_query.setdefault(o.query["id"], {})[o.mode] = o
    lines = [f"### {prepared.workspace}: {prepared.encoder}", "",
             f"{prepared.documents} documents, {prepared.sections} sections"
             + (f", indexed and embedded in {prepared.seconds:.0f} s." if prepared.seconds else
                " (indexed and embedded by an earlier run)."), "",
             f"Found in the top {TOP} (documents), of the queries:", "",
             "| form | " + " | ".join(MODES) + " |", "| --- |" + " ---: |" * len(MODES)]
    for form in ("paraphrase", "keyword"):
        for label, pairs in ((f"{form}s, the four of issue 51.12", issue_pairs), (f"{form}s, all", None)):
            chosen = [o for o in outcomes if pairs is None or o.query["pair"] in pairs]
            counts = [found_count(chosen, form, mode) for mode in MODES]
            lines.append(f"| {label} | " + " | ".join(f"{a} of {b}" for a, b in counts) + " |")
    lines += ["", "Rank of the first labelled RFC among the hits' documents (bold: in the top 3; -: not in the "
              "50 hits):", "", "| pair | form | query | " + " | ".join(MODES) + " |",
              "| --- | --- | --- |" + " ---: |" * len(MODES)]
    for modes in by_query.values():
        q = next(iter(modes.values())).query
        lines.append(f"| {q['pair']} | {q['form']} | `{q['query']}` | "
                     + " | ".join(cell(modes[m]) for m in MODES) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--db", default="/tmp/paraphrase-bench/rfcs.db")
    parser.add_argument("--embedder", default=None, help="JSON: another embedding model to measure beside MiniLM")
    parser.add_argument("--out", default="doc/benchmarks/paraphrase.md")
    args = parser.parse_args()
    root = Path(args.shared) / "data" / "rust-rfcs" / "text"
    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    queries = load_queries(QUERIES)
    issue_pairs = {q["pair"] for q in queries if "issue 51.12" in q.get("note", "")}
    runs: list[tuple[str, dict[str, Any] | None]] = [("rfcs", None)]
    if args.embedder:
        other = json.loads(args.embedder)
        runs.append((f"rfcs-{other.get('model') or other['provider']}".replace("/", "-"), other))
    sections: list[str] = []
    with Engine(args.db) as engine:
        for workspace, embedder in runs:
            prepared = prepare(engine, workspace, root, embedder)
            outcomes = measure(engine, workspace, queries)
            sections += [*table(prepared, outcomes, issue_pairs), ""]
            print(workspace, {f"{form}/{mode}": found_count(outcomes, form, mode)
                              for form in ("paraphrase", "keyword") for mode in MODES}, flush=True)
    write(Path(args.out), sections, len(queries) // 2)


def write(out: Path, sections: list[str], pairs: int) -> None:
    head = [
        "# Paraphrases against keywords on the Rust RFCs", "",
        f"Generated by `python -m tests.bench.paraphrase` (in `make bench`) on {date.today()}, "
        f"{platform.machine()}, Python {platform.python_version()}; a shared 2-core machine (other jobs running: "
        "the fill's time is not a speed figure).", "",
        f"{pairs} pairs of queries (tests/bench/eval/rfcs-paraphrase.jsonl), each a paraphrase and the keyword "
        "form that names the feature, labelled by reading the RFCs before any run; the first four are the "
        "paraphrases a new user tried in issue 51.12. The Rust RFCs are a reporting corpus: nothing was tuned "
        "on them or on these queries. No ranker.", "",
    ]
    out.write_text("\n".join(head + sections).rstrip("\n") + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
