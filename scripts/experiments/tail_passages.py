"""Second passage experiment (issue 16): keep each section's vector and add vectors only for the text past the
model's 256-piece cap ("tail passages"); and vector pseudo-relevance feedback. Results: tail-passages.md.

Offline, on the fusion benchmark's captures: the semantic list and cosines are recomputed exactly (no 1-bit
prefilter) with the extra vectors, then replayed through the product's fusion, boosts, cap and demotion with the
captured lexical list. The baseline ("section") is computed the same offline way.

    PYTHONPATH=. python scripts/experiments/tail_passages.py --db /work/benchdb/bench.db \\
        --captures /work/benchdb/cap3 --sets techdocs-dev,techdocs-validation,techdocs-heldout [--prf]
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import numpy as np
from tokenizers import Tokenizer

from autodoc_core.providers.minilm import BertEncoder
from autodoc_core.rank import hits
from tests.bench.fusion import by_kind, inputs_of, product, query_sets, replay

CAP = 256  # the model's input, in word pieces with [CLS] and [SEP]
OVERLAP = 32
Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]


class Corpus:
    """One workspace's section vectors and embedded texts, read from the benchmark database."""

    def __init__(self, conn: apsw.Connection, name: str) -> None:
        ws_id, fp = conn.execute("SELECT id, active_model_fp FROM workspaces WHERE name = ?", (name,)).fetchone()
        rows = list(conn.execute("SELECT id, text_hash, breadcrumb, body FROM chunks WHERE ws_id = ? ORDER BY id",
                                 (ws_id,)))
        vectors = dict(conn.execute("SELECT text_hash, f32_bytes FROM embeddings WHERE ws_id = ? AND model_fp = ?",
                                    (ws_id, fp)))
        self.name = name
        self.ids = np.array([r[0] for r in rows])
        self.index_of = {int(c): i for i, c in enumerate(self.ids)}
        self.sections = np.stack([np.frombuffer(vectors[r[1]], dtype=np.float32) for r in rows])
        self.texts = [f"{r[2]}\n{r[3]}" if r[3] else r[2] for r in rows]
        self.crumbs = [r[2] for r in rows]


def tail_passages(corpus: Corpus, tokenizer: Tokenizer, window: int) -> tuple[np.ndarray, list[str]]:
    """Passages of at most ``window`` pieces (breadcrumb first) over the text past the cap, ``OVERLAP`` pieces
    of overlap; the owner section's row for each."""
    owners, passages = [], []
    for row, (text, crumb, encoding) in enumerate(zip(corpus.texts, corpus.crumbs,
                                                      tokenizer.encode_batch(corpus.texts), strict=True)):
        n = len(encoding.ids)
        if n <= CAP:
            continue
        first_body = next((p for p in range(1, n - 1) if encoding.offsets[p][0] > len(crumb)), n - 1)
        span = max(64, window - 3 - (first_body - 1))
        start = max(first_body, CAP - 1 - OVERLAP)
        while start < n - 1:
            end = min(n - 1, start + span)
            passages.append(crumb + "\n" + text[encoding.offsets[start][0] : encoding.offsets[end - 1][1]])
            owners.append(row)
            if end >= n - 1:
                break
            start = end - OVERLAP
    return np.array(owners, dtype=np.int64), passages


def scorer(kind: str, rest: float = 0.5) -> Scorer:
    """A section's score from its own cosine and its best tail passage's (-1 when it has none)."""
    if kind == "section":
        return lambda section, best: section
    if kind == "max":
        return np.maximum
    return lambda section, best: section + rest * np.maximum(0.0, best - section)


def replayed(conn: apsw.Connection, record: dict, corpus: Corpus, scores: np.ndarray) -> tuple[list[str], list[str]]:
    """(semantic alone, hybrid) documents with the semantic list and cosines from ``scores``."""
    semantic = [int(corpus.ids[i]) for i in np.argsort(-scores)[:50]]
    mine = copy.deepcopy({k: v for k, v in record.items() if k != "_inputs"})
    inputs = mine["fuse_inputs"]
    inputs["rankings"]["semantic"] = semantic
    union = sorted({c for ids in inputs["rankings"].values() for c in ids})
    inputs["cosines"] = {str(c): float(scores[corpus.index_of[c]]) for c in union}
    for chunk_id, row in hits.load_rows(conn, [c for c in union if str(c) not in inputs["rows"]]).items():
        inputs["rows"][str(chunk_id)] = [row.doc_id, row.path, json.dumps(row.tags), row.inbound_links,
                                         row.successor_id, row.status, row.kind]
    alone = copy.deepcopy(mine)
    alone["fuse_inputs"]["rankings"] = {"semantic": semantic}  # as the engine's semantic-only run: boosts too
    return replay(alone, product()), replay(mine, product())


def summary(label: str, set_name: str, records: list[dict], semantic: list, hybrid: list) -> str:
    sem, hyb = by_kind(semantic, records)["all"], by_kind(hybrid, records)["all"]
    para = by_kind(hybrid, records).get("paraphrase", {}).get("r3", float("nan"))
    return (f"| {set_name} | {label} | {len(records)} | {sem['r3']:.3f} / {sem['ndcg10']:.3f} | "
            f"{hyb['r3']:.3f} / {hyb['ndcg10']:.3f} | {para:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--captures", required=True, help="the fusion benchmark's cache folder")
    parser.add_argument("--sets", required=True)
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--vectors", default=None, help="folder to keep passage vectors in (default: --captures)")
    parser.add_argument("--windows", default="256,128", help="passage windows to try, in word pieces")
    parser.add_argument("--prf", action="store_true", help="vector pseudo-relevance feedback instead")
    parser.add_argument("--long", type=int, default=0,
                        help="instead: sections over the cap embedded again with this longer input (e.g. 512)")
    args = parser.parse_args()
    conn = apsw.Connection(args.db, flags=apsw.SQLITE_OPEN_READONLY)
    encoder = BertEncoder()
    tokenizer = Tokenizer.from_file(str(encoder.model_dir / "tokenizer.json"))
    tokenizer.no_truncation()
    keep = Path(args.vectors or args.captures)
    sets = {s.name: s for s in query_sets(Path(args.shared).resolve())}
    corpora: dict[str, Corpus] = {}
    print("| set | variant | queries | semantic R@3 / nDCG@10 | hybrid R@3 / nDCG@10 | hybrid paraphrase R@3 |")
    print("|---|---|---|---|---|---|")
    for set_name in args.sets.split(","):
        qset = sets[set_name]
        corpus = corpora.setdefault(qset.workspace, Corpus(conn, qset.workspace))
        queries = {q["id"]: q for q in qset.load()}
        records = json.loads((Path(args.captures) / f"fusion-{set_name}.json").read_text())
        vectors = {q: encoder.embed([queries[q]["query"]])[0] for q in queries}
        windows = [int(w) for w in args.windows.split(",")]
        if args.long:
            variants = long_variants(corpus, tokenizer, keep, args.long)
        elif args.prf:
            variants = prf_variants()
        else:
            variants = passage_variants(corpus, tokenizer, encoder, keep, windows)
        for label, score in variants.items():
            semantic, hybrid = [], []
            for record in records:
                if record["fuse_inputs"] is None or record["kind"] == "facet":  # filtered: keep the engine's
                    semantic.append(record["runs"]["semantic"]["docs"])
                    hybrid.append(record["runs"]["hybrid"]["docs"])
                    continue
                sem_docs, hyb_docs = replayed(conn, record, corpus, score(corpus, vectors[record["id"]], record))
                semantic.append(sem_docs)
                hybrid.append(hyb_docs)
            print(summary(label, set_name, records, semantic, hybrid), flush=True)


def passage_variants(corpus: Corpus, tokenizer: Tokenizer, encoder: BertEncoder, keep: Path,
                     windows: list[int]) -> dict:
    variants = {"section (baseline)": lambda c, q, r: c.sections @ q}
    for window in windows:
        owners, vectors = passage_vectors(corpus, tokenizer, encoder, keep, window)
        for kind in ("max", "soft 0.5"):
            variants[f"tail {window}, {kind}"] = _with_passages(owners, vectors, scorer(kind.split()[0]))
    return variants


def _with_passages(owners: np.ndarray, vectors: np.ndarray, score: Scorer) -> Callable:
    def run(corpus: Corpus, query: np.ndarray, record: dict) -> np.ndarray:
        best = np.full(len(corpus.ids), -1.0, dtype=np.float32)
        np.maximum.at(best, owners, vectors @ query)
        return score(corpus.sections @ query, best)
    return run


def passage_vectors(corpus: Corpus, tokenizer: Tokenizer, encoder: BertEncoder, keep: Path,
                    window: int) -> tuple[np.ndarray, np.ndarray]:
    path = keep / f"tail-passages-{corpus.name}-{window}.npz"
    if path.exists():
        stored = np.load(path)
        return stored["owners"], stored["vectors"]
    owners, passages = tail_passages(corpus, tokenizer, window)
    started = time.perf_counter()
    vectors = encoder.embed(passages, workers=2)
    print(f"<!-- {corpus.name}: {len(passages)} tail passages of <= {window} pieces for "
          f"{len(set(owners.tolist()))} of {len(corpus.ids)} sections, embedded in "
          f"{time.perf_counter() - started:.0f} s -->", flush=True)
    np.savez(path, owners=owners, vectors=vectors)
    return owners, vectors


def long_variants(corpus: Corpus, tokenizer: Tokenizer, keep: Path, max_tokens: int) -> dict:
    """Sections over the cap embedded again reading up to ``max_tokens`` pieces (MiniLM has 512 positions but
    was tuned on at most 256): the longer vector instead of the section's, or beside it."""
    path = keep / f"long-sections-{corpus.name}-{max_tokens}.npz"
    if path.exists():
        stored = np.load(path)
        owners, vectors = stored["owners"], stored["vectors"]
    else:
        lengths = [len(e.ids) for e in tokenizer.encode_batch(corpus.texts)]
        owners = np.array([i for i, n in enumerate(lengths) if n > CAP], dtype=np.int64)
        started = time.perf_counter()
        vectors = BertEncoder(max_tokens=max_tokens).embed([corpus.texts[i] for i in owners], workers=2)
        print(f"<!-- {corpus.name}: {len(owners)} sections over {CAP} pieces embedded again at {max_tokens} in "
              f"{time.perf_counter() - started:.0f} s -->", flush=True)
        np.savez(path, owners=owners, vectors=vectors)
    variants = {"section (baseline)": lambda c, q, r: c.sections @ q}
    for kind in ("replace", "max", "soft 0.5"):
        variants[f"input {max_tokens}, {kind}"] = _with_long(owners, vectors, kind)
    return variants


def _with_long(owners: np.ndarray, vectors: np.ndarray, kind: str) -> Callable:
    def run(corpus: Corpus, query: np.ndarray, record: dict) -> np.ndarray:
        section = corpus.sections @ query
        if kind == "replace":
            section = section.copy()
            section[owners] = vectors @ query
            return section
        best = np.full(len(corpus.ids), -1.0, dtype=np.float32)
        best[owners] = vectors @ query
        return scorer(kind.split()[0])(section, best)
    return run


def prf_variants() -> dict:
    """q' = q + beta * the mean vector of the product's top 3 fused chunks, then search again."""
    def feedback(beta: float) -> Callable:
        def run(corpus: Corpus, query: np.ndarray, record: dict) -> np.ndarray:
            if beta:
                top = [f.chunk_id for f in product()(inputs_of(record))[:3]]
                query = query + beta * corpus.sections[[corpus.index_of[c] for c in top]].mean(axis=0)
                query = query / np.linalg.norm(query)
            return corpus.sections @ query
        return run
    return {f"feedback beta={beta}": feedback(beta) for beta in (0.0, 0.3, 0.6, 1.0)}


if __name__ == "__main__":
    main()
