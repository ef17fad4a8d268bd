"""Mixed queries (an English sentence holding one identifier), lexically: the symbol retriever as a backstop in
a sentence (``fuse.symbol_only_last``, its leader kept only when another retriever found it too) against the rule
before it, in one run, beside the identifier and path sets whose figures it must keep.

Each query runs through the engine three times, lexical stage only (no embedding needed): as the product ranks,
with the sentence rule switched off here (``keep_leaders`` told it is no sentence, ``symbol_only_last``
leaving the order as it is), and with the symbol leader never kept in a sentence. Ranking is by document, as
in ``tests/bench/retrieval.py``.

    python -m tests.bench.mixed --shared ../shared [--db /tmp/mixed.db] [--out doc/benchmarks/mixed.md]

Without ``--db`` the three corpora are indexed into a temporary database (lexically, a minute or two).
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from autodoc_core.rank import fuse
from autodoc_core.service.engine import Engine
from tests.bench.retrieval import documents_in_order, load_queries, ndcg_at_10, recall_at, search_options

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "tests" / "bench" / "eval"
CORPORA = {"techdocs": "data/techdocs/docs", "keps": "data/keps/docs", "rfcs": "data/rust-rfcs/text"}
# (set, corpus, role): the mixed sets this rule is about, then the identifier and path sets it must not hurt.
SETS = [
    ("techdocs-mixed", "techdocs", "tuning"), ("keps-mixed", "keps", "tuning"),
    ("rfcs-mixed", "rfcs", "held-out reporting"),
    *[(f"techdocs-identifiers{n}", "techdocs", "tuning") for n in ("", "2", "3", "4")],
    *[(f"keps-identifiers{n}", "keps", "tuning") for n in ("", "2")],
    ("techdocs-paths", "techdocs", "tuning"), ("keps-paths", "keps", "tuning"),
]


@contextlib.contextmanager
def sentence_rule_off() -> Iterator[None]:
    """The fusion as it was before the sentence rule: the symbol leader kept, symbol-only chunks in place."""
    keep_leaders, last = fuse.keep_leaders, fuse.symbol_only_last

    def leaders_as_before(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        return keep_leaders(*args, **{**kwargs, "sentence": False})

    fuse.keep_leaders, fuse.symbol_only_last = leaders_as_before, lambda fused: fused
    try:
        yield
    finally:
        fuse.keep_leaders, fuse.symbol_only_last = keep_leaders, last


@contextlib.contextmanager
def symbol_leader_never_kept() -> Iterator[None]:
    """The alternative not taken: in a sentence the symbol leader is not kept on top even when the word search
    found it too."""
    alone = fuse._found_by_symbol_alone
    fuse._found_by_symbol_alone = lambda chunk_id, rankings: True
    try:
        yield
    finally:
        fuse._found_by_symbol_alone = alone


def figures(ranked: list[list[str]], queries: list[dict]) -> dict[str, float]:
    n = len(queries) or 1
    relevant = [set(q["relevant"]) for q in queries]
    rr = [next((1 / (i + 1) for i, doc in enumerate(r) if doc in g), 0.0) for r, g in zip(ranked, relevant,
                                                                                          strict=True)]
    return {"r3": sum(recall_at(r, g, 3) for r, g in zip(ranked, relevant, strict=True)) / n,
            "mrr": sum(rr) / n,
            "ndcg": sum(ndcg_at_10(r, g) for r, g in zip(ranked, relevant, strict=True)) / n}


def ranked(engine: Engine, corpus: str, queries: list[dict]) -> list[list[str]]:
    return [documents_in_order(engine.search_query(corpus, q["query"], search_options(q, {
        "stages": ["lexical"], "snippets": False})).to_wire()["hits"]) for q in queries]


def prepare(engine: Engine, shared: Path) -> None:
    known = {ws["name"] for ws in engine.workspace_list()}
    for name, folder in CORPORA.items():
        if name not in known:
            engine.workspace_add(name, str(shared / folder))
            engine.workspace_configure(name, {"embedder": "none"})
        engine.workspace_index(name)


def report(rows: list[tuple[str, str, int, dict, dict, int, dict]], seconds: float) -> str:
    lines = [
        "# Mixed queries: an identifier in a sentence (lexical)",
        "",
        "Written by `python -m tests.bench.mixed` (issue 39, item 4). Each query ran three times in one run, lexical",
        "stage only: **before**, the symbol retriever's leader kept on top and its symbol-only chunks fused in",
        "place; **after**, the product: with words around its identifiers the symbol retriever is a backstop (its",
        "leader kept only when the word search found it too, chunks only it found below every other hit).",
        "Document Recall@3, MRR and nDCG@10; `changed`",
        "counts the queries whose first ten documents differ. The mixed sets were written before any run",
        "(tests/bench/eval/README.md); the RFC set is held-out reporting, the rule was built on the issue's example",
        "alone. One choice was made, on the tuning sets only: in a sentence the symbol leader is still kept on top",
        "when the word search found it too (the product), rather than never (**never kept**, the last column:",
        "better on the mixed tuning sets, but techdocs-identifiers4's `upstream_conf deprecated` lost its first",
        "place, and the identifier figures were to be kept).",
        "",
        "| Set | Role | Queries | R@3 before | R@3 after | MRR before | MRR after | nDCG@10 before | nDCG@10 after "
        "| changed | never kept R@3/MRR/nDCG |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, role, n, before, after, changed, other in rows:
        lines.append(f"| {name} | {role} | {n} | {before['r3']:.3f} | {after['r3']:.3f} | {before['mrr']:.3f} | "
                     f"{after['mrr']:.3f} | {before['ndcg']:.3f} | {after['ndcg']:.3f} | {changed} | "
                     f"{other['r3']:.3f}/{other['mrr']:.3f}/{other['ndcg']:.3f} |")
    lines += ["", f"Machine: {platform.machine()}, Python {platform.python_version()}, shared by other jobs while "
              f"it ran (quality figures do not depend on it); {seconds:.0f} s in all.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--db", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "doc" / "benchmarks" / "mixed.md")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        engine = Engine(args.db or Path(scratch) / "mixed.db")
        try:
            prepare(engine, args.shared.resolve())
            rows = []
            for name, corpus, role in SETS:
                queries = load_queries(EVAL / f"{name}.jsonl")
                with sentence_rule_off():
                    before = ranked(engine, corpus, queries)
                with symbol_leader_never_kept():
                    other = ranked(engine, corpus, queries)
                after = ranked(engine, corpus, queries)
                changed = sum(b[:10] != a[:10] for b, a in zip(before, after, strict=True))
                rows.append((name, role, len(queries), figures(before, queries), figures(after, queries), changed,
                             figures(other, queries)))
                print(rows[-1], flush=True)
        finally:
            engine.close()
    args.out.write_text(report(rows, time.monotonic() - started))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
