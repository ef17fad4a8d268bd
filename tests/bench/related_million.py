"""``search.related`` beside a lexical ``search.query`` over ``serve --stdio`` on a generated workspace of a
million sections, each with a vector: the second half of the related speed target (doc/benchmarks/related.md).

The sections are the soak benchmark's generated Markdown (tests/bench/soak.py: Zipf-distributed words, front
matter, headings), each file linking to the next two, indexed by the engine with no embedder (lexical and
symbol tables as for real). Embedding a million sections takes days on this machine, so their vectors are
synthetic: each file has a random direction, and each of its sections that direction plus noise, normalised,
stored as the default local model's vectors and that model made active. The semantic scan's cost does not
depend on what the vectors mean; only the nearest sections found do.

    python -m tests.bench.related_million [--work /tmp/related-bench] [--chunks 1000000]

Writes ``<work>/million.json`` (the figures), which tests/bench/related.py puts into the report. The work
folder keeps the files and the database between runs.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from autodoc_core.providers.embedders import DEFAULT_EMBEDDER, make_embedder
from autodoc_core.service.engine import Engine
from autodoc_core.store.embeddings import sign_bits
from tests.bench import related_speed
from tests.bench.soak import SECTIONS_PER_FILE, document, vocabulary, zipf_words

NAME = "million"
DIMS = 384
NOISE = 0.8  # a section's distance from its file's direction (cosines to siblings around 0.6)
QUERIES, SECTIONS = 40, 40


def relpath(number: int) -> str:
    return f"area{number % 50:02d}/doc{number:06d}.md"


def generate(root: Path, files: int, seed: int) -> list[str]:
    """The soak's files, each linking to the next two (the link stage has something to read)."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    for number in range(files):
        path = root / relpath(number)
        path.parent.mkdir(parents=True, exist_ok=True)
        links = " ".join(f"[see {n}](../{relpath(n)})" for n in ((number + 1) % files, (number + 2) % files))
        path.write_text(document(rng, vocab, number) + f"\n## See also\n\n{links}\n", encoding="utf-8")
    return vocab


def fill_synthetic(db: Path, name: str, seed: int = 11) -> int:
    """Synthetic vectors for every section of the workspace, stored as the default local model's, then that
    model configured again: its vectors are all there, so it is ready and nothing is embedded."""
    embedder = make_embedder(dict(DEFAULT_EMBEDDER))
    assert embedder is not None
    embedder.dimensions = DIMS
    count = synthetic_vectors(db, name, embedder.model_fp, seed)
    with Engine(db) as engine:
        engine.workspace_configure(name, {"embedder": dict(DEFAULT_EMBEDDER)})
    return count


def synthetic_vectors(db: Path, name: str, model_fp: str, seed: int) -> int:
    """A vector for every chunk text of the workspace, as its model's, and that model active."""
    rng = np.random.default_rng(seed)
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA journal_mode=WAL")
    ws_id = conn.execute("SELECT id FROM workspaces WHERE name = ?", (name,)).fetchone()[0]
    rows = conn.execute("SELECT text_hash, MIN(doc_id) FROM chunks WHERE ws_id = ? GROUP BY text_hash",
                        (ws_id,)).fetchall()
    directions: dict[int, np.ndarray] = {}
    batch = 20_000
    with conn:
        conn.execute("DELETE FROM embeddings WHERE ws_id = ?", (ws_id,))
        for start in range(0, len(rows), batch):
            part = rows[start : start + batch]
            base = np.stack([directions.setdefault(doc, rng.standard_normal(DIMS, dtype=np.float32))
                             for _, doc in part])
            vectors = base + NOISE * rng.standard_normal((len(part), DIMS), dtype=np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            bits = sign_bits(vectors)
            conn.executemany("INSERT INTO embeddings(ws_id, model_fp, text_hash, bits_bytes, f32_bytes) "
                             "VALUES (?, ?, ?, ?, ?)",
                             [(ws_id, model_fp, h, bits[i].tobytes(), vectors[i].tobytes())
                              for i, (h, _) in enumerate(part)])
        conn.execute("UPDATE workspaces SET active_model_fp = ?, vector_epoch = vector_epoch + 1 WHERE id = ?",
                     (model_fp, ws_id))
    conn.close()
    return len(rows)


def prepare(work: Path, chunks: int, seed: int) -> dict[str, Any]:
    """Files, index and vectors, each made once (a later run reuses them)."""
    root, db = work / "million-kb", work / "million.db"
    files = chunks // (SECTIONS_PER_FILE + 1)  # + the "See also" section
    made: dict[str, Any] = json.loads((work / "million-made.json").read_text()) \
        if (work / "million-made.json").exists() else {}
    if not made.get("generated"):
        began = time.perf_counter()
        generate(root, files, seed)
        made["generated"], made["files"] = round(time.perf_counter() - began), files
    if not made.get("indexed"):
        began = time.perf_counter()
        with Engine(db) as engine:
            if NAME not in {ws["name"] for ws in engine.workspace_list()}:
                engine.workspace_add(NAME, str(root))
            engine.workspace_configure(NAME, {"embedder": "none"})
            engine.workspace_index(NAME)
            made["chunks"] = engine.workspace_status(NAME)["chunks"]
        made["indexed"] = round(time.perf_counter() - began)
    if not made.get("vectors"):
        began = time.perf_counter()
        made["vectors"] = fill_synthetic(db, NAME, seed)
        made["vectors_seconds"] = round(time.perf_counter() - began)
    (work / "million-made.json").write_text(json.dumps(made))
    return made


def sample(db: Path, seed: int) -> tuple[list[str], list[tuple[str, int]]]:
    """Generated queries (the soak's word queries) and the third section of random files."""
    rng = random.Random(seed + 1)
    vocab = vocabulary(random.Random(seed))
    queries = [" ".join(zipf_words(rng, vocab, rng.randint(2, 5))) for _ in range(QUERIES)]
    conn = apsw.Connection(f"file:{db}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    top = conn.execute("SELECT MAX(id) FROM documents").fetchone()[0]
    picked = []
    for doc_id in rng.sample(range(1, top + 1), SECTIONS * 3):
        row = conn.execute("SELECT d.path, c.line_start FROM chunks c JOIN documents d ON d.id = c.doc_id "
                           "WHERE d.id = ? ORDER BY c.ord LIMIT 1 OFFSET 2", (doc_id,)).fetchone()
        if row:
            picked.append(row)
    conn.close()
    return queries, picked[:SECTIONS]


def report_lines(work: Path) -> list[str]:
    """The million-section section of doc/benchmarks/related.md, from the last run's ``million.json``."""
    found = work / "million.json"
    if not found.exists():
        return ["### A million sections: not measured", "",
                f"`python -m tests.bench.related_million --work {work}` generates and measures it (no {found})."]
    result = json.loads(found.read_text())
    return [f"### {result['chunks']:,} sections with {result['vectors']:,} vectors (generated)", "",
            f"`python -m tests.bench.related_million` on {result['measured']}: the soak benchmark's generated Markdown "
            f"({result['files']:,} files; Zipf-distributed words, each file linking to the next two), indexed by the "
            f"engine in {result['indexed']} s with no embedder; synthetic vectors (each file a random direction, each "
            f"section that plus noise) stored as the local model's in {result['vectors_seconds']} s, as embedding a "
            "million sections would take days here. Queries: 2 to 5 generated words. Sections: the third section "
            f"of each of {SECTIONS} random files. The semantic stage scanned {result['scanned']:,} vectors per "
            "related search.",
            "", *result["lines"]]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default="/tmp/related-bench")
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    made = prepare(work, args.chunks, args.seed)
    print("prepared", made, flush=True)
    db = work / "million.db"
    queries, picked = sample(db, args.seed)
    timings = related_speed.measure(db, NAME, queries, picked)
    with Engine(db) as engine:
        answer = engine.search_related(NAME, picked[0][0], {"line": picked[0][1]}).to_wire()
    result = {**made, "files": made.get("files", args.chunks // (SECTIONS_PER_FILE + 1)),
              "scanned": answer["query"].get("semantic_scanned") or 0, "measured": time.strftime("%Y-%m-%d %H:%M UTC"),
              "lines": related_speed.lines(timings, len(queries), len(picked), f"{made['chunks']:,} sections"),
              "lexical_ms": timings.lexical, "related_ms": timings.related, "cpu": timings.cpu}
    (work / "million.json").write_text(json.dumps(result))
    print("\n".join(result["lines"]))


if __name__ == "__main__":
    main()
