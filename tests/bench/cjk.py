"""``make bench``: Chinese, Japanese and Korean body words in the lexical stage (issue 33).

Writes ``doc/benchmarks/cjk.md``. On /work/shared/data/cjk (zh, ja, ko: translated documentation), the queries
of ``tests/bench/eval/cjk-{dev,heldout}.jsonl`` (words in the body text of 1-3 files, labelled by exact
substring; see ``tests/bench/cjk_queries.py``) are searched with autodoc's lexical stage, beside two plain
FTS5 tables over the same chunk texts, measured in the same run: ``trigram`` (FTS5's substring tokenizer:
MATCH for three characters or more, LIKE for fewer, as its documentation says), and ``unicode61`` on the text
as it is (how autodoc indexed before). The three ways of tokenizing are also built as tables of their own over
the same chunk texts, for their size and build time.

The English check: SciFact and techdocs are indexed in the same run; every chunk text, title, alias and tag
and every query that holds no CJK letter or full-width form is given to FTS5 byte for byte as before, so their
lexical figures cannot move; the bench counts those that do hold one, and reports the figures.

    python -m tests.bench.cjk --shared ../shared --out doc/benchmarks/cjk.md [--no-english] [--semantic]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import apsw

from autodoc_core.index import indexer
from autodoc_core.parse.cjk import has_cjk, index_text
from autodoc_core.service.engine import Engine
from tests.bench.retrieval import documents_in_order, load_queries, quality, recall_at, timed_index

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "tests" / "bench" / "eval"
LANGUAGES = ("zh", "ja", "ko")
SETS = ("dev", "heldout", "heldout2")
ROUNDS = 3  # table builds per tokenizing: the median is reported


def chunk_texts(db: Path, ws_id: int) -> list[tuple[str, str]]:
    """(breadcrumb and body, path) of every chunk of the workspace: what the reference tables index."""
    source = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    rows = source.execute(
        "SELECT c.breadcrumb || char(10) || c.body, d.path FROM chunks c JOIN documents d ON d.id = c.doc_id "
        "WHERE c.ws_id = ? ORDER BY c.id", (ws_id,)).fetchall()
    source.close()
    return rows


class Table:
    """One plain FTS5 table over the chunk texts (one column, no weights), in memory."""

    def __init__(self, rows: list[tuple[str, str]], tokenize: str, rewrite: Callable[[str], str]) -> None:
        self.conn = apsw.Connection(":memory:")
        self.tokenize = tokenize
        self.conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, path UNINDEXED, tokenize='{tokenize}')")
        with self.conn:
            self.conn.executemany("INSERT INTO t(text, path) VALUES (?, ?)", [(rewrite(t), p) for t, p in rows])

    def search(self, word: str) -> list[str]:
        if self.tokenize == "trigram" and len(word) < 3:  # FTS5 trigram: shorter strings only by LIKE (a scan)
            rows = self.conn.execute("SELECT path FROM t WHERE text LIKE ? LIMIT 50", (f"%{word}%",))
        else:
            rows = self.conn.execute("SELECT path FROM t WHERE t MATCH ? ORDER BY rank LIMIT 50",
                                     ('"' + word.replace('"', '""') + '"',))
        return list(dict.fromkeys(r[0] for r in rows))


def build_cost(rows: list[tuple[str, str]], tokenize: str, rewrite: Callable[[str], str], work: Path) -> dict:
    """Median build time (rewriting included) and size on disk of the table, over ROUNDS fresh files."""
    seconds, size = [], 0
    for round_ in range(ROUNDS):
        path = work / f"cost-{tokenize.replace(' ', '-')}-{rewrite.__name__}-{round_}.db"
        conn = apsw.Connection(str(path))
        started = time.perf_counter()
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, content='', tokenize='{tokenize}')")
        with conn:
            conn.executemany("INSERT INTO t(text) VALUES (?)", [(rewrite(t),) for t, _ in rows])
        conn.execute("INSERT INTO t(t) VALUES ('optimize')")
        seconds.append(time.perf_counter() - started)
        size = conn.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 't_%'").fetchone()[0]
        conn.close()
        path.unlink()
    return {"seconds": statistics.median(seconds), "bytes": size}


def as_is(text: str) -> str:
    return text


def engine_cost(folder: Path, work: Path, rewrite: Callable[[str], str]) -> dict:
    """A fresh index run of the folder (median seconds of ROUNDS), its word index's and database's size, with
    the text given to FTS5 rewritten by ``rewrite``: ``as_is`` is the indexing of before issue 33 (the rewrite is
    all that changed in the indexer)."""
    seconds, sizes = [], {}
    kept = indexer.index_text
    indexer.index_text = rewrite
    try:
        for round_ in range(ROUNDS):
            db = work / f"engine-{rewrite.__name__}-{round_}.db"
            engine = Engine(db)
            try:
                seconds.append(timed_index(engine, "c", folder)["seconds"])
            finally:
                engine.close()
            conn = apsw.Connection(str(db))
            sizes = {"fts": conn.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'chunks_fts_%'").fetchone()[0],
                     "db": conn.execute("SELECT SUM(pgsize) FROM dbstat").fetchone()[0]}
            conn.close()
            for path in work.glob(f"{db.name}*"):
                path.unlink()
    finally:
        indexer.index_text = kept
    return {"seconds": statistics.median(seconds), **sizes}


def cjk_queries(name: str) -> dict[str, list[dict]]:
    queries = load_queries(EVAL / f"cjk-{name}.jsonl")
    return {language: [q for q in queries if q["kind"] == language] for language in LANGUAGES}


def lexical_lists(engine: Engine, ws: str, queries: list[dict]) -> list[list[str]]:
    lexical_only = {"stages": ["lexical"], "limit": 10}
    return [documents_in_order(engine.search_query(ws, q["query"], lexical_only).to_wire()["hits"]) for q in queries]


def cjk_run(engine: Engine, db: Path, corpus: Path, work: Path) -> tuple[list[str], dict]:
    index, recall, costs, misses = {}, {}, {}, []
    for language in LANGUAGES:
        ws = f"cjk-{language}"
        index[language] = timed_index(engine, ws, corpus / language)
        rows = chunk_texts(db, engine._workspace(ws).id)
        trigram, before = Table(rows, "trigram", as_is), Table(rows, "porter unicode61", as_is)
        for name in SETS:
            queries = cjk_queries(name)[language]
            ours = lexical_lists(engine, ws, queries)
            recall[(language, name)] = (len(queries), quality(ours, queries)["r3"],
                                        quality([trigram.search(q["query"]) for q in queries], queries)["r3"],
                                        quality([before.search(q["query"]) for q in queries], queries)["r3"])
            misses += [(language, q, r[:3]) for q, r in zip(queries, ours, strict=True)
                       if recall_at(r, set(q["relevant"]), 3) < 1]
        costs[language] = {"chunks": len(rows), "engine_before": engine_cost(corpus / language, work, as_is),
                           "engine": engine_cost(corpus / language, work, index_text),
                           "before": build_cost(rows, "porter unicode61", as_is, work),
                           "bigrams": build_cost(rows, "porter unicode61", index_text, work),
                           "trigram": build_cost(rows, "trigram", as_is, work)}
    return cjk_report(index, recall, costs, misses), {"index": index}


def cjk_report(index: dict, recall: dict, costs: dict, misses: list) -> list[str]:
    lines = [
        "## CJK body words: document Recall@3 of the lexical stage",
        "",
        "| language | set | queries | autodoc lexical | FTS5 trigram | unicode61 as before |",
        "|---|---|---|---|---|---|",
    ]
    for (language, name), (count, ours, trigram, before) in recall.items():
        lines.append(f"| {language} | {name} | {count} | {ours:.3f} | {trigram:.3f} | {before:.3f} |")
    lines += ["", f"Queries not fully found in autodoc's top 3 documents: {len(misses)}."]
    lines += [f"- {language} `{q['query']}`: labelled {', '.join(q['relevant'])}; top 3 {', '.join(top) or 'none'}"
              for language, q, top in misses]
    lines += [
        "",
        "## Index size and index time against before",
        "",
        f"A fresh `workspace.index` of each folder (median of {ROUNDS} runs), with the CJK rewrite and without it "
        "(the indexing of before, measured in the same run by giving FTS5 the text as it is); sizes from `dbstat`.",
        "",
        "| language | documents | chunks | index run before | now | word index before | now | database before | now |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for language, cost in costs.items():
        before, now = cost["engine_before"], cost["engine"]
        lines.append(f"| {language} | {index[language]['documents']} | {cost['chunks']} | {before['seconds']:.2f} s | "
                     f"{now['seconds']:.2f} s | {before['fts'] / 1e6:.2f} MB | {now['fts'] / 1e6:.2f} MB | "
                     f"{before['db'] / 1e6:.2f} MB | {now['db'] / 1e6:.2f} MB |")
    lines += [
        "",
        "## Bigrams against trigram: size and build time",
        "",
        "Each tokenizing built as a table of its own over the same chunk texts (one column; `optimize` after the "
        f"inserts; median of {ROUNDS} builds; size from `dbstat`). autodoc indexes its `head` and `body` columns "
        "the bigram way; before, it indexed them as `unicode61 as before`.",
        "",
        "| language | chunks | unicode61 as before | bigrams (autodoc) | trigram |",
        "|---|---|---|---|---|",
    ]
    for language, cost in costs.items():
        cells = [f"{cost[k]['bytes'] / 1e6:.2f} MB, {cost[k]['seconds']:.2f} s" for k in ("before", "bigrams",
                                                                                       "trigram")]
        lines.append(f"| {language} | {cost['chunks']} | {' | '.join(cells)} |")
    return lines


def english_check(engine: Engine, db: Path, shared: Path) -> list[str]:
    lines = ["", "## English: unchanged", "",
             "| corpus | queries | queries with CJK or full-width | chunks | chunk texts, titles, aliases, tags with "
             "CJK or full-width | lexical nDCG@10 | R@3 | R@10 |", "|---|---|---|---|---|---|---|---|"]
    for name, queries_file in (("scifact", "scifact-train.jsonl"), ("techdocs", "techdocs-dev.jsonl")):
        queries = load_queries(shared / "eval" / queries_file)
        timed_index(engine, name, shared / "data" / name / "docs")
        ws_id = engine._workspace(name).id
        source = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        touched = sum(1 for breadcrumb, body, title, aliases, tags in source.execute(
            "SELECT c.breadcrumb, c.body, d.title, d.aliases, d.tags FROM chunks c JOIN documents d ON d.id = c.doc_id "
            "WHERE c.ws_id = ?", (ws_id,)) if has_cjk("\n".join([breadcrumb, body, title or "", *json.loads(aliases),
                                                                   *json.loads(tags)])))
        chunks = source.execute("SELECT COUNT(*) FROM chunks WHERE ws_id = ?", (ws_id,)).fetchone()[0]
        source.close()
        options = {"stages": ["lexical"], "limit": 50}
        ranked = [documents_in_order(engine.search_query(name, q["query"], {
            **options, **({"facets": q["facets"]} if q.get("facets") else {})}).to_wire()["hits"]) for q in queries]
        figures = quality(ranked, queries)
        with_cjk = sum(1 for q in queries if has_cjk(q["query"]))
        lines.append(f"| {name} | {len(queries)} | {with_cjk} | {chunks} | {touched} | {figures['ndcg10']:.3f} | "
                     f"{figures['r3']:.3f} | {figures['r10']:.3f} |")
    lines += ["", "A text with no CJK letter and no full- or half-width form is given to FTS5 as it is "
              "(`parse.cjk.index_text` returns the same string; a query's words are quoted as before), so where "
              "both counts are 0 the index and every query are those of before, byte for byte, and the figures "
              "are those of `doc/benchmarks/kb-retrieval.md` (lexical, the same queries)."]
    return lines


def semantic_check(engine: Engine) -> list[str]:
    """The default (English-only) model on the CJK queries: why a mostly-CJK query skips the semantic stage."""
    lines = ["", "## The default model on CJK queries", "",
             "| language | set | queries | semantic-only R@3 (all-MiniLM-L6-v2) |", "|---|---|---|---|"]
    for language in LANGUAGES:
        engine.workspace_index(f"cjk-{language}", {"wait": "semantic"})
        for name in SETS:
            queries = cjk_queries(name)[language]
            ranked = [documents_in_order(engine.search_query(f"cjk-{language}", q["query"], {
                "stages": ["semantic"], "limit": 10}).to_wire()["hits"]) for q in queries]
            lines.append(f"| {language} | {name} | {len(queries)} | {quality(ranked, queries)['r3']:.3f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--out", default="doc/benchmarks/cjk.md")
    parser.add_argument("--no-english", dest="english", action="store_false", help="skip SciFact and techdocs")
    parser.add_argument("--semantic", action="store_true", help="embed the CJK corpora with the default model")
    args = parser.parse_args()
    shared = Path(args.shared).resolve()
    corpus = shared / "data" / "cjk"
    if not corpus.is_dir():
        sys.exit(f"no CJK corpus at {corpus}")
    work = Path(tempfile.mkdtemp(prefix="autodoc-bench-cjk-"))
    db = work / "bench.db"
    engine = Engine(db)
    try:
        lines = [
            "# CJK benchmark",
            "",
            f"Made by `make bench` on {time.strftime('%Y-%m-%d')}, {platform.machine()}, Python "
            f"{platform.python_version()}, SQLite {apsw.sqlite_lib_version()}. Corpus: `data/cjk` (zh: Rust by "
            "Example, ja: the Vue.js docs, ko: react.dev; see its README). Queries: `tests/bench/eval/cjk-dev.jsonl`"
            " and `cjk-heldout.jsonl`, 40 a language each, words standing in 1-3 files, labelled by exact substring,"
            " picked by `tests/bench/cjk_queries.py` (fixed seeds) before any run. Nothing was tuned on the held-out"
            " set.",
            "",
        ]
        cjk_lines, _ = cjk_run(engine, db, corpus, work)
        lines += cjk_lines
        if args.english:
            lines += english_check(engine, db, shared)
        if args.semantic:
            lines += semantic_check(engine)
    finally:
        engine.close()
        shutil.rmtree(work, ignore_errors=True)
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
