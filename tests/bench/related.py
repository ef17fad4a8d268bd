"""``make bench``: related sections (``search.related``), quality on citations and speed beside a search.

Quality: documents citing other documents of the same corpus are the ground truth (``related_corpus``); the
copies indexed have every citation removed, with its link. For each citing document ``search.related`` is
asked for the document as a whole, and the cited documents are looked for among the documents of its hits
(Recall@10, MRR), by source (semantic only, lexical only, fused) and against a baseline measured in the same
run: the document's own summary (its "Summary" section, else its first) sent to ``search.query``. Parameters
are chosen on the KEPs; the Rust RFCs only report.

Speed (tests/bench/related_speed.py): ``search.related`` for sections of techdocs over ``serve --stdio`` against
lexical ``search.query`` for the dev queries in the same process, interleaved; and the figures of the last
million-section run (tests/bench/related_million.py, ``<work>/million.json``) when there is one.

    python -m tests.bench.related --shared ../shared [--work /tmp/related-bench] [--out doc/benchmarks/related.md]
        [--speed-only] [--synthetic-vectors]

The work folder keeps the copies and their databases between runs (embedding them takes a while).
``--speed-only`` rewrites the speed section alone; ``--synthetic-vectors`` gives techdocs synthetic vectors
instead of MiniLM's (the report says so).
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autodoc_core.related import sections as related
from autodoc_core.retrieve import more_like_this
from autodoc_core.service.engine import Engine
from tests.bench import related_million, related_speed
from tests.bench.related_corpus import CORPORA, KEEP_CHARS, TEMPLATE_SHARE, Rewritten, rewrite
from tests.bench.retrieval import load_queries

ROOT = Path(__file__).resolve().parents[2]
TUNING, REPORTING = "keps", "rust-rfcs"
HITS_ASKED = 30  # three per document at most: at least ten documents
SOURCES = {"semantic only": ["semantic"], "lexical only": ["lexical"], "fused": None}
WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8)
TERMS = (10, 25, 40)
LEAST = (1, 2)
POSTINGS = (600, 1000, 1500, 2000, 4000)
COST_SLACK = 0.01  # a cost knob takes its cheapest value within this much of the best Recall@10
VECTORS = ("mean", "first")
SPEED_SECTIONS = 120


@dataclass
class Scores:
    recall10: float
    mrr: float
    ms: float

    def row(self, name: str) -> str:
        return f"| {name} | {self.recall10:.3f} | {self.mrr:.3f} | {self.ms:.1f} |"


def prepared(engine: Engine, name: str, root: Path) -> None:
    """The copy registered, indexed and embedded (a run that finds it so does nothing)."""
    if name not in {ws["name"] for ws in engine.workspace_list()}:
        engine.workspace_add(name, str(root))
    engine.workspace_index(name, {"wait": "semantic"})


def documents(hits: list[dict[str, Any]], own: str) -> list[str]:
    return [path for path in dict.fromkeys(hit["path"] for hit in hits) if path != own]


def score(ranked: list[list[str]], relevant: list[set[str]], ms: list[float]) -> Scores:
    recall = [len(r & set(docs[:10])) / len(r) for docs, r in zip(ranked, relevant, strict=True)]
    reciprocal = [next((1 / rank for rank, doc in enumerate(docs, 1) if doc in r), 0.0)
                  for docs, r in zip(ranked, relevant, strict=True)]
    return Scores(statistics.mean(recall), statistics.mean(reciprocal), statistics.median(ms))


def related_scores(engine: Engine, name: str, cited: dict[str, list[str]], stages: list[str] | None) -> Scores:
    ranked, ms = [], []
    for path in cited:
        opts: dict[str, Any] = {"limit": HITS_ASKED, **({"stages": stages} if stages else {})}
        started = time.perf_counter()
        answer = engine.search_related(name, path, opts).to_wire()
        ms.append((time.perf_counter() - started) * 1000)
        if answer["related"]["linked_documents"]:
            raise RuntimeError(f"{path} still links to {answer['related']['linked_documents']} documents in the copy")
        ranked.append(documents(answer["hits"], path))
    return score(ranked, [set(v) for v in cited.values()], ms)


def summary_text(engine: Engine, name: str, path: str) -> str:
    """The document's "Summary" section, else its first, as indexed."""
    with engine.store.snapshot() as conn:
        ws_id = conn.execute("SELECT id FROM workspaces WHERE name = ?", (name,)).fetchone()[0]
        rows = conn.execute("SELECT c.breadcrumb, c.body FROM chunks c JOIN documents d ON d.id = c.doc_id "
                            "WHERE d.ws_id = ? AND d.path = ? ORDER BY c.ord", (ws_id, path)).fetchall()
    chosen = next((body for crumb, body in rows if crumb.rstrip().lower().endswith("summary")), rows[0][1])
    return chosen[:4000]


def baseline_scores(engine: Engine, name: str, cited: dict[str, list[str]]) -> Scores:
    ranked, ms = [], []
    for path in cited:
        text = summary_text(engine, name, path)
        started = time.perf_counter()
        answer = engine.search_query(name, text, {"limit": HITS_ASKED}).to_wire()
        ms.append((time.perf_counter() - started) * 1000)
        ranked.append(documents(answer["hits"], path))
    return score(ranked, [set(v) for v in cited.values()], ms)


@contextlib.contextmanager
def parameters(weight: float, terms: int, least: int, vector: str, postings: int) -> Iterator[None]:
    saved = current()
    related.RELATED_LEXICAL_WEIGHT, more_like_this.MORE_LIKE_THIS_TERMS = weight, terms
    related.DOCUMENT_LEAST_FREQUENCY, related.DOCUMENT_VECTOR = least, vector
    more_like_this.MORE_LIKE_THIS_POSTINGS = postings
    try:
        yield
    finally:
        related.RELATED_LEXICAL_WEIGHT, more_like_this.MORE_LIKE_THIS_TERMS = saved["weight"], saved["terms"]
        related.DOCUMENT_LEAST_FREQUENCY, related.DOCUMENT_VECTOR = saved["least"], saved["vector"]
        more_like_this.MORE_LIKE_THIS_POSTINGS = saved["postings"]


def current() -> dict[str, Any]:
    """The code's parameters as they stand."""
    return {"weight": related.RELATED_LEXICAL_WEIGHT, "terms": more_like_this.MORE_LIKE_THIS_TERMS,
            "least": related.DOCUMENT_LEAST_FREQUENCY, "vector": related.DOCUMENT_VECTOR,
            "postings": more_like_this.MORE_LIKE_THIS_POSTINGS}


def tune(engine: Engine, name: str, cited: dict[str, list[str]]) -> tuple[dict[str, Any], list[str]]:
    """Each parameter on the source it moves, in turn: the document vector on semantic only, the words on
    lexical only, then the blend's weight on the fused answer. Best Recall@10, then MRR; for the words'
    postings (a cost), the smallest within ``COST_SLACK`` of the best Recall@10."""
    chosen = current()
    lines = ["| parameter | value | source | Recall@10 | MRR |", "|---|---|---|---|---|"]
    steps = [("vector", VECTORS, ["semantic"]), ("terms", TERMS, ["lexical"]), ("least", LEAST, ["lexical"]),
             ("postings", POSTINGS, ["lexical"]), ("weight", WEIGHTS, None)]
    for key, values, stages in steps:
        results = {}
        for value in values:
            with parameters(**{**chosen, key: value}):
                results[value] = related_scores(engine, name, cited, stages)
            source = "fused" if stages is None else f"{stages[0]} only"
            lines.append(f"| {key} | {value} | {source} | {results[value].recall10:.3f} | {results[value].mrr:.3f} |")
        best = max(values, key=lambda v: (round(results[v].recall10, 4), results[v].mrr))
        if key == "postings":
            best = min(v for v in values if results[v].recall10 >= results[best].recall10 - COST_SLACK)
        chosen[key] = best
    return chosen, lines


def quality(engine: Engine, name: str, cited: dict[str, list[str]]) -> dict[str, Scores]:
    found = {source: related_scores(engine, name, cited, stages) for source, stages in SOURCES.items()}
    found["baseline: summary sent to search.query"] = baseline_scores(engine, name, cited)
    return found


def verdict(found: dict[str, Scores]) -> str:
    fused, base = found["fused"], found["baseline: summary sent to search.query"]
    best = max(found["semantic only"].recall10, found["lexical only"].recall10)
    beats = fused.recall10 > base.recall10 and fused.mrr > base.mrr
    holds = fused.recall10 >= best
    return (f"fused {'beats' if beats else 'does NOT beat'} the baseline on both measures; fused Recall@10 is "
            f"{'at least' if holds else 'BELOW'} the better of its two sources ({best:.3f}).")


# -- speed over serve --stdio (tests/bench/related_speed.py) -------------------------------------


def sample_sections(db: Path, name: str, count: int) -> list[tuple[str, int]]:
    """Every n-th section of the workspace, as (path, its first line)."""
    engine = Engine(db)
    with engine.store.snapshot() as conn:
        rows = conn.execute("SELECT d.path, c.line_start FROM chunks c JOIN documents d ON d.id = c.doc_id "
                            "JOIN workspaces w ON w.id = d.ws_id WHERE w.name = ? ORDER BY c.id", (name,)).fetchall()
    engine.close()
    step = max(1, len(rows) // count)
    return rows[::step][:count]


def techdocs_with_vectors(db: Path, root: Path, synthetic: bool) -> str:
    """techdocs indexed with its vectors: MiniLM's (embedded here, once: ~11 minutes on 2 idle cores), or
    synthetic ones (``related_million.synthetic_vectors``) when embedding is out of reach. Says which."""
    if not synthetic:
        with Engine(db) as engine:
            prepared(engine, "techdocs", root)
        return "Vectors: MiniLM-L6's, embedded in process."
    with Engine(db) as engine:
        if "techdocs" not in {ws["name"] for ws in engine.workspace_list()}:
            engine.workspace_add("techdocs", str(root))
        engine.workspace_configure("techdocs", {"embedder": "none"})
        engine.workspace_index("techdocs")
    vectors = related_million.fill_synthetic(db, "techdocs")
    return (f"Vectors: {vectors:,} synthetic ones (`--synthetic-vectors`: each document a random direction, each "
            "section that plus noise), as embedding techdocs was out of reach on the machine at the time: the scan "
            "costs the same, the neighbours found are not MiniLM's.")


LIVE_MOVES = 2000
LIVE_COST = """
local live = require('autodoc.related').live
local asked, spent = live.state.seq, {}
for i = 1, ... do
  local started = vim.uv.hrtime()
  live.moved()
  spent[i] = (vim.uv.hrtime() - started) / 1000
end
table.sort(spent)
return { spent[math.floor(#spent / 2)], spent[math.floor(#spent * 0.95)], live.state.seq - asked }
"""


def live_cost(db: Path, root: Path, path: str, line: int, work: Path) -> list[str]:
    """What :AutodocRelatedLive costs the editor per cursor move inside the section it lists (every keystroke
    while typing there): its CursorMoved handler, timed in the editor."""
    from tests.bench.picker import start_neovim, stop_neovim, wait_for

    nvim = start_neovim(db, root, work, "techdocs")
    try:
        nvim.command(f"edit {root / path}")
        nvim.current.window.cursor = (line, 0)
        nvim.command("AutodocRelatedLive")
        wait_for(lambda: nvim.exec_lua("local s = require('autodoc.related').live.state; return s and s.shown ~= nil"))
        median, p95, asked = nvim.exec_lua(LIVE_COST, LIVE_MOVES)
    finally:
        stop_neovim(nvim)
    return ["", f"The live side list (`:AutodocRelatedLive`) costs the editor {median:.1f} µs (median; p95 "
                f"{p95:.1f} µs) per cursor move inside the section it lists ({LIVE_MOVES:,} moves timed in the "
                f"editor, its CursorMoved handler), and asks the engine {asked} times for them: typing there "
                "is not slowed."]


# -- the report ------------------------------------------------------------------------------------


def corpus_lines(title: str, done: Rewritten, found: dict[str, Scores]) -> list[str]:
    pairs = sum(len(v) for v in done.cited.values())
    return ["", f"### {title}", "",
            f"{done.documents} documents, {len(done.cited)} citing another, {pairs} (citing, cited) pairs.", "",
            "| answer | Recall@10 | MRR | median ms (in process) |", "|---|---|---|---|",
            *(scores.row(name) for name, scores in found.items()), "", verdict(found)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--work", default="/tmp/related-bench")
    parser.add_argument("--techdocs-db", default=None, help="a database with techdocs indexed and embedded")
    parser.add_argument("--out", default="doc/benchmarks/related.md")
    parser.add_argument("--speed-only", action="store_true",
                        help="measure and rewrite only the speed section (the quality needs three corpora embedded)")
    parser.add_argument("--synthetic-vectors", action="store_true",
                        help="give techdocs synthetic vectors instead of embedding it (the speed section says so)")
    args = parser.parse_args()
    shared, work = Path(args.shared), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.speed_only:
        out = Path(args.out)
        kept = out.read_text().split("\n## Speed")[0].rstrip("\n")
        out.write_text(kept + "\n\n" + "\n".join(speed_section(args, shared, work)) + "\n")
        print(f"wrote {out}")
        return
    sections: dict[str, list[str]] = {}
    chosen: dict[str, Any] = {}
    for corpus_name in (TUNING, REPORTING):
        done = rewrite(CORPORA[corpus_name], shared, work / corpus_name)
        with Engine(work / f"{corpus_name}.db") as engine:
            prepared(engine, corpus_name, done.root)
            if corpus_name == TUNING:
                chosen, tuning = tune(engine, corpus_name, done.cited)
                sections["tuning"] = tuning
            with parameters(**chosen):
                found = quality(engine, corpus_name, done.cited)
            role = "tuning: the parameters were chosen here" if corpus_name == TUNING else "reporting only"
            sections[corpus_name] = corpus_lines(f"{corpus_name} ({role})", done, found)
            print(corpus_name, {k: (round(v.recall10, 3), round(v.mrr, 3)) for k, v in found.items()}, flush=True)
    speed_rows = speed_section(args, shared, work)
    defaults = current()
    if chosen != defaults:  # the speed run's server uses the code's defaults: they must be the chosen ones
        sections["tuning"] += ["", f"**The code's defaults {defaults} are not the chosen ones: set them and run "
                                   "again.**"]
    write(Path(args.out), sections, chosen, speed_rows)


def speed_section(args: argparse.Namespace, shared: Path, work: Path) -> list[str]:
    # Synthetic vectors are stored as MiniLM's: kept apart, a later run embedding techdocs never takes them.
    default_db = work / ("techdocs-synthetic.db" if args.synthetic_vectors else "techdocs.db")
    techdocs_db = Path(args.techdocs_db) if args.techdocs_db else default_db
    root = (shared / "data" / "techdocs").resolve()
    vectors = techdocs_with_vectors(techdocs_db, root, args.synthetic_vectors)
    queries = [q["query"] for q in load_queries(shared / "eval" / "techdocs-dev.jsonl")]
    picked = sample_sections(techdocs_db, "techdocs", SPEED_SECTIONS)
    timings = related_speed.measure(techdocs_db, "techdocs", queries, picked)
    live = live_cost(techdocs_db, root, *picked[len(picked) // 2], work)
    return [
        "## Speed: search.related beside a lexical search, over serve --stdio", "",
        f"Measured on {time.strftime('%Y-%m-%d %H:%M')} UTC. One `autodoc serve --stdio` process, warmed up, then "
        f"{related_speed.ROUNDS} rounds of: the dev set's queries as lexical `search.query`, then "
        "`search.related` for every n-th section of the workspace (with its first line), limit 10.", "",
        "### techdocs", "", vectors, "",
        *related_speed.lines(timings, len(queries), len(picked), "techdocs"), *live, "",
        *related_million.report_lines(work),
    ]


def write(out: Path, sections: dict[str, list[str]], chosen: dict[str, Any], speed_rows: list[str]) -> None:
    lines = [
        "# Related sections (search.related)", "",
        f"Generated by `python -m tests.bench.related` (in `make bench`) on {time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, Python {platform.python_version()}; MiniLM-L6 vectors, no ranker.", "",
        "## Quality: do a document's related documents include the ones its authors cited?", "",
        "Ground truth nobody here wrote: KEPs citing KEPs, Rust RFCs citing RFCs (by number, path or pull request). "
        "The copies indexed have every citation removed, with the links that carried them (no `link` hit "
        f"remains; the benchmark checks), and keep each document's first {KEEP_CHARS:,} characters (after the KEP "
        "template's table of contents and sign-off checklist) to bound the embedding. A document cited by more "
        f"than {TEMPLATE_SHARE:.0%} of the citing documents is a template's citation (the KEPs' production "
        "readiness KEP) and is left out. Each citing document asks `search.related` for the document as a whole "
        f"({HITS_ASKED} hits, so at least ten documents); Recall@10 and MRR are over the cited documents, by "
        "the documents of the hits in order. The baseline, in the same run: the document's \"Summary\" section "
        "(else its first) sent to `search.query` with every stage.", "",
        "Chosen on the KEPs: lexical weight of the blend "
        f"**{chosen['weight']}**, **{chosen['terms']}** distinctive words, a document's words written at least "
        f"**{chosen['least']}** times, their postings together at most **{chosen['postings']:,}** (a cost: the "
        f"smallest within {COST_SLACK} of the best lexical Recall@10), the document vector **{chosen['vector']}** "
        "of its sections' vectors.",
        *sections[TUNING], *sections[REPORTING],
        "", "### Tuning steps (KEPs only)", "", *sections["tuning"],
        "", *speed_rows,
    ]
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
