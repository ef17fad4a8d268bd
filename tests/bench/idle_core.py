"""``make bench``, the background fill's throughput: today's one steady worker (1 intra-op thread, passes of
up to 4,096 padded tokens) beside the steady worker plus the idle-core worker (passes of up to 1,024 tokens),
alternating rounds on the same techdocs chunk texts in fill batches of 64, no search running.

    python -m tests.bench.idle_core --shared ../shared --out doc/benchmarks/idle-core.md
"""

from __future__ import annotations

import autodoc_core  # noqa: F401 - before numpy, as in the product

# isort: split
import argparse
import os
import statistics
import time
from pathlib import Path

from autodoc_core.providers.minilm import default_model_dir
from autodoc_core.providers.onnx_encoder import OnnxEncoder
from tests.bench.encoder import corpus_texts

FILL_BATCH = 64  # LocalEmbedder.batch_size: what one fill batch hands the encoder


def fill_seconds(encoder: OnnxEncoder, texts: list[str], idle_core: bool) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), FILL_BATCH):
        encoder.embed(texts[start:start + FILL_BATCH], workers=1, idle_core=idle_core)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--texts", type=int, default=640)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="doc/benchmarks/idle-core.md")
    args = parser.parse_args()
    texts = corpus_texts(Path(args.shared), args.texts)
    encoder = OnnxEncoder(default_model_dir())
    encoder.embed(texts[:32])
    seconds: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.rounds):
        for idle_core in (False, True):
            seconds[idle_core].append(fill_seconds(encoder, texts, idle_core))
            print(idle_core, seconds[idle_core][-1], flush=True)
    today, ours = (statistics.median(seconds[k]) for k in (False, True))
    lines = ["# The background fill: one worker, or one plus the idle core", "",
             f"{len(texts)} techdocs chunk texts in fill batches of {FILL_BATCH}, all-MiniLM-L6-v2 fp32 on "
             f"onnxruntime, {os.cpu_count()} cores, {args.rounds} alternating rounds ({time.strftime('%Y-%m-%d')}), "
             "medians, no search running. Per round: " + ", ".join(
                 f"{a:.0f} s against {b:.0f} s" for a, b in zip(seconds[False], seconds[True], strict=True))
             + ". A loaded machine swings both; compare the rows of one run.", "",
             "| fill | seconds | texts/s | ratio |", "|---|---|---|---|",
             f"| one worker (today's) | {today:.1f} | {len(texts) / today:.1f} | 1.00x |",
             f"| steady + idle-core worker | {ours:.1f} | {len(texts) / ours:.1f} | {today / ours:.2f}x |"]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
