"""``make bench``, where the background fill loses against the encoder's own pace (issue 51.13). The same techdocs
chunk texts, in the order the fill takes them, embedded five ways in alternating rounds, from the encoder's tight
loop to the whole fill:

1. tight loop: every text in one ``encoder.embed`` call, 2 workers (the corpus sorted by length, then cut);
2. fill batches: the same, one call per batch of 64 texts as the fill hands them over (sorted within a batch);
3. fill batches, fill workers: one steady worker plus the idle-core worker (passes of 1,024 tokens), as the
   fill runs them, in a thread at the fill's nice 10;
4. the fill: ``Engine.fill_vectors`` in the background (reading missing texts, storing vectors, the lease);
5. padding: the padded tokens each batching runs, against the texts' own (no timing: the same on any machine).

    python -m tests.bench.fill_gap --shared ../shared --out doc/benchmarks/fill-gap.md
"""

from __future__ import annotations

import autodoc_core  # noqa: F401 - before numpy, as in the product

# isort: split
import argparse
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from autodoc_core.providers.base import mark_background_thread
from autodoc_core.providers.embedders import BACKGROUND_WORKERS, BULK_WORKERS, LocalEmbedder
from autodoc_core.providers.onnx_encoder import BATCH_TOKENS, IDLE_CORE_BATCH_TOKENS, _batches
from autodoc_core.service.engine import Engine
from autodoc_core.service.filler import _lower_this_threads_priority
from tests.bench.shared_fill import copy_documents

FILL_BATCH = LocalEmbedder.batch_size


def in_fill_thread(work: Callable[[], None]) -> float:
    """Seconds ``work`` takes in a thread set up as the filler's (nice 10, marked background)."""
    seconds: list[float] = []

    def run() -> None:
        _lower_this_threads_priority()
        mark_background_thread()
        started = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - started)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return seconds[0]


def fill_texts(db: Path) -> list[str]:
    """The chunk texts in the order the fill takes them (document order, distinct), as it sends them."""
    with Engine(db) as engine, engine.store.snapshot() as conn:
        rows = conn.execute("SELECT text_hash, breadcrumb, body FROM chunks ORDER BY doc_id, ord").fetchall()
    distinct = {h: (f"{crumb}\n{body}" if body else crumb) for h, crumb, body in rows}
    return list(distinct.values())


def padded_tokens(ids: list[list[int]], size: int, batch_tokens: int) -> int:
    total = 0
    for start in range(0, len(ids), size):
        part = ids[start:start + size]
        total += sum(len(batch) * max(len(part[i]) for i in batch) for batch in _batches(part, batch_tokens))
    return total


def one_fill(root: Path, work: Path, outside: list[float]) -> float:
    """Seconds of a whole background fill; appends to ``outside`` the seconds it spent outside the embedder's
    ``embed`` (choosing texts, storing vectors, the lease, the batches' hand-offs)."""
    db = work / f"fill-{time.monotonic_ns()}.db"
    with Engine(db) as engine:
        engine.workspace_add("kb", str(root))
        engine.workspace_index("kb")
        ws = engine._workspace("kb")
        embedder = engine._semantic.of(ws).embedder(ws)
        embedder.encoder.embed(["warm"])  # loaded before the clock starts
        inside = [0.0]
        embed = embedder.embed

        def timed_embed(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return embed(*args, **kwargs)
            finally:
                inside[0] += time.perf_counter() - started

        embedder.embed = timed_embed  # this instance only: the bench's own hook, not the product's
        seconds = in_fill_thread(lambda: engine.fill_vectors(ws, background=True))
    outside.append(seconds - inside[0])
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--texts", type=int, default=1280)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--note", default="")
    parser.add_argument("--out", default="doc/benchmarks/fill-gap.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="autodoc-fill-gap-") as tmp:
        work, root = Path(tmp), Path(tmp) / "kb"
        root.mkdir()
        copy_documents(Path(args.shared) / "data" / "techdocs" / "docs", root, args.texts)
        db = work / "texts.db"
        with Engine(db) as engine:
            engine.workspace_add("kb", str(root))
            engine.workspace_index("kb")
        texts = fill_texts(db)
        encoder = LocalEmbedder({"provider": "local"}).encoder
        encoder.embed(texts[:32])
        batches = [texts[i:i + FILL_BATCH] for i in range(0, len(texts), FILL_BATCH)]
        ways: dict[str, Callable[[], float]] = {
            "1. tight loop, 2 workers": lambda: timed(lambda: encoder.embed(texts, workers=BULK_WORKERS)),
            "2. fill batches of 64, 2 workers": lambda: timed(
                lambda: [encoder.embed(b, workers=BULK_WORKERS) for b in batches]),
            "2b. fill batches of 64, 2 workers, passes of 1,024 tokens": lambda: timed(
                lambda: [encoder.embed(b, batch_tokens=IDLE_CORE_BATCH_TOKENS, workers=BULK_WORKERS) for b in batches]),
            "3. fill batches, steady + idle-core worker, nice 10": lambda: in_fill_thread(
                lambda: [encoder.embed(b, workers=BACKGROUND_WORKERS, idle_core=True) for b in batches]),
            "4. the fill (Engine.fill_vectors in the background)": lambda: one_fill(root, work, outside),
        }
        outside: list[float] = []
        seconds: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.rounds):
            for name, way in ways.items():
                seconds[name].append(way())
                print(name, round(seconds[name][-1], 2), flush=True)
        ids = [e.ids for e in encoder.tokenizer.encode_batch(texts)]
        padding = {"whole corpus, passes of 4,096": padded_tokens(ids, len(ids), BATCH_TOKENS),
                   "batches of 64, passes of 4,096": padded_tokens(ids, FILL_BATCH, BATCH_TOKENS),
                   "batches of 64, passes of 1,024 (idle-core)": padded_tokens(ids, FILL_BATCH, IDLE_CORE_BATCH_TOKENS)}
    write_report(args, len(texts), sum(len(i) for i in ids), seconds, padding, outside)


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def write_report(args: argparse.Namespace, texts: int, tokens: int, seconds: dict[str, list[float]],
                 padding: dict[str, int], outside: list[float]) -> None:
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    tight = next(iter(medians.values()))
    lines = ["# Where the fill loses against the encoder's own pace", "",
             f"{texts} distinct techdocs chunk texts ({tokens} tokens after the 256-token cap) in the fill's order, "
             f"all-MiniLM-L6-v2 on onnxruntime, {os.cpu_count()} cores, {args.rounds} alternating round(s) "
             f"({time.strftime('%Y-%m-%d')}), medians. `python -m tests.bench.fill_gap` (in `make bench`). "
             + args.note, "",
             "| way | seconds | texts/s | vs the tight loop | rounds |", "|---|---|---|---|---|"]
    for name, median in medians.items():
        rounds = ", ".join(f"{s:.1f}" for s in seconds[name])
        lines.append(f"| {name} | {median:.1f} | {texts / median:.1f} | {median / tight:.2f}x | {rounds} |")
    fills = seconds["4. the fill (Engine.fill_vectors in the background)"]
    shares = ", ".join(f"{o:.1f} s of {f:.1f} s ({100 * o / f:.0f}%)" for o, f in zip(outside, fills, strict=True))
    lines += ["", f"The fill's time outside the embedder's embed (texts chosen, vectors stored, lease): {shares}."]
    lines += ["", "Padded tokens each batching runs (the texts' own: "
              f"{tokens}; the same on any machine):", "", "| batching | padded tokens | vs the texts' own |",
              "|---|---|---|"]
    lines += [f"| {name} | {count} | {count / tokens:.2f}x |" for name, count in padding.items()]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
