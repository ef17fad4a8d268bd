"""``make soak`` (and the end of ``make bench``): a generated 250,000-chunk workspace, queries over
``autodoc serve --stdio`` in one process while another process edits and re-indexes files without
pause; errors, latency percentiles and memory over time, and the database size.

The writer is this process (it holds the writer lease); the server is a separate reader process,
as with an editor and an agent sharing one database. Writes ``doc/benchmarks/soak.md``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from autodoc_core.service.engine import Engine
from tests.bench.retrieval import percentile

ROOT = Path(__file__).resolve().parents[2]
SECTIONS_PER_FILE = 10
TYPES = ("adr", "rfc", "guide", "reference", "note")
STATUSES = ("accepted", "proposed", "superseded", "draft")


def vocabulary(rng: random.Random, size: int = 40_000) -> list[str]:
    syllables = ["ka", "lo", "mi", "ter", "on", "ex", "pra", "vel", "sin", "dur", "qua", "bet", "nor", "gim", "ul"]
    words = {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(size * 2)}
    return sorted(words)[:size]


_CUMULATIVE: dict[int, list[float]] = {}


def zipf_words(rng: random.Random, vocab: list[str], count: int) -> list[str]:
    """Zipf-Mandelbrot draws (p(rank) ~ 1 / (rank + 50)): content words without stopwords, so even
    the most common word is in a minority of sections, as in real prose."""
    weights = _CUMULATIVE.get(len(vocab))
    if weights is None:
        weights = _CUMULATIVE[len(vocab)] = list(itertools.accumulate(1.0 / (r + 50) for r in range(len(vocab))))
    return rng.choices(vocab, cum_weights=weights, k=count)


def document(rng: random.Random, vocab: list[str], number: int, revision: int = 0) -> str:
    kind, status = TYPES[number % len(TYPES)], STATUSES[number % len(STATUSES)]
    lines = [f"---\ntype: {kind}\nstatus: {status}\ntags: [{vocab[number % 500]}, {vocab[number % 77]}]\n---",
             f"# {' '.join(zipf_words(rng, vocab, 4)).title()} {number}", ""]
    for section in range(SECTIONS_PER_FILE):
        lines += [f"## {' '.join(zipf_words(rng, vocab, 3))} {section}", "",
                  " ".join(zipf_words(rng, vocab, rng.randint(40, 90))),
                  f"The handler `reclaim{number}x{section}` returns error -3{number % 1000:03d} on rev{revision}.", ""]
    return "\n".join(lines)


def generate(root: Path, files: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    for number in range(files):
        folder = root / f"area{number % 50:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"doc{number:06d}.md").write_text(document(rng, vocab, number), encoding="utf-8")
    return vocab


def queries(rng: random.Random, vocab: list[str], files: int, count: int) -> list[str]:
    shapes = [
        lambda: " ".join(zipf_words(rng, vocab, rng.randint(2, 5))),
        lambda: f'"{" ".join(zipf_words(rng, vocab, 2))}"',
        lambda: f"{vocab[rng.randrange(2000)]}* type:{rng.choice(TYPES)}",
        lambda: f"{' '.join(zipf_words(rng, vocab, 3))} -status:superseded",
        lambda: f"reclaim{rng.randrange(files)}x{rng.randrange(SECTIONS_PER_FILE)}",
        lambda: f"-3{rng.randrange(1000):03d}",
    ]
    return [rng.choice(shapes)() for _ in range(count)]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def db_size_mb(db: Path) -> float:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file()) / 1e6


class StdioServer:
    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "autodoc_core", "--db", str(db), "serve", "--stdio"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        self.next_id = 0

    def call(self, method: str, params: list) -> dict:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


@dataclass
class Minute:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    edits: int = 0
    server_rss: list[float] = field(default_factory=list)
    writer_rss: list[float] = field(default_factory=list)


class Editor(threading.Thread):
    """Edits a random file and re-indexes it, without pause, until stopped; remembers the last
    token it wrote so the query loop can check the reader sees committed edits."""

    def __init__(self, engine: Engine, root: Path, files: int, vocab: list[str], seed: int) -> None:
        super().__init__(daemon=True)
        self.engine, self.root, self.files, self.vocab = engine, root, files, vocab
        self.rng = random.Random(seed)
        self.stop, self.edits, self.errors, self.last_token = threading.Event(), 0, [], None

    def run(self) -> None:
        while not self.stop.is_set():
            number = self.rng.randrange(self.files)
            relpath = f"area{number % 50:02d}/doc{number:06d}.md"
            token = f"soakedit{self.edits}"
            text = document(self.rng, self.vocab, number, revision=self.edits) + f"\n## Edit\n\n{token}\n"
            (self.root / relpath).write_text(text, encoding="utf-8")
            try:
                self.engine.workspace_index("soak", {"paths": [relpath]})
            except Exception as exc:  # counted and reported
                self.errors.append(repr(exc))
            self.edits += 1
            self.last_token = token


def soak(args: argparse.Namespace) -> list[str]:
    work = Path(tempfile.mkdtemp(prefix="autodoc-soak-"))
    root, db = work / "kb", work / "soak.db"
    files = args.chunks // SECTIONS_PER_FILE
    began = time.perf_counter()
    vocab = generate(root, files, args.seed)
    generated = time.perf_counter() - began
    engine = Engine(db)
    try:
        engine.workspace_add("soak", str(root))
        engine.workspace_configure("soak", {"embedder": "none"})
        began = time.perf_counter()
        report = engine.workspace_index("soak")
        indexed = time.perf_counter() - began
        chunks = engine.workspace_status("soak")["chunks"]
        size_before = db_size_mb(db)
        server = StdioServer(db)
        rng = random.Random(args.seed + 1)
        planned = queries(rng, vocab, files, args.queries)
        editor = Editor(engine, root, files, vocab, args.seed + 2)
        minutes: list[Minute] = []
        stale_edits = checked_edits = 0
        start = time.monotonic()
        editor.start()
        interval = args.minutes * 60 / args.queries
        for number, text in enumerate(planned):
            due = start + number * interval
            time.sleep(max(0.0, due - time.monotonic()))
            minute_index = int((time.monotonic() - start) // 60)
            while len(minutes) <= minute_index:
                minutes.append(Minute())
            minute = minutes[minute_index]
            token = editor.last_token
            if number % 10 == 9 and token:
                text = token  # a committed edit must be visible to the reader process
            sent = time.perf_counter()
            answer = server.call("search.query", ["soak", text, {"limit": 10}])
            minute.latencies.append((time.perf_counter() - sent) * 1000)
            if "error" in answer:
                minute.errors += 1
            elif text == token:
                checked_edits += 1
                stale_edits += not answer["result"]["hits"]
            if number % 20 == 0:
                minute.server_rss.append(rss_mb(server.process.pid))
                minute.writer_rss.append(rss_mb(os.getpid()))
        editor.stop.set()
        editor.join(timeout=120)
        elapsed = time.monotonic() - start
        server.close()
        size_after = db_size_mb(db)
        total_edits = editor.edits
    finally:
        engine.close()
        shutil.rmtree(work, ignore_errors=True)
    return render(args, files, chunks, generated, indexed, report, minutes, elapsed, total_edits, editor.errors,
                  checked_edits, stale_edits, size_before, size_after)


def render(args, files, chunks, generated, indexed, report, minutes, elapsed, edits, edit_errors, checked, stale,
           size_before, size_after) -> list[str]:
    every = [lat for m in minutes for lat in m.latencies]
    errors = sum(m.errors for m in minutes)
    lines = [
        "# Soak run",
        "",
        f"Generated by `make soak` (also the last step of `make bench`) on {time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        f"A generated workspace of {files:,} files x {SECTIONS_PER_FILE} sections: **{chunks:,} chunks** (front "
        f"matter, tags, code identifiers and error codes in every file). Generated in {generated:.0f} s, indexed "
        f"in {indexed:.0f} s ({report['chunks_written']:,} chunks written). Lexical and symbol stages only: "
        "embedding 250k chunks in-process takes hours on this machine, so the semantic stage is not part of the soak.",
        "",
        f"Then for {elapsed / 60:.1f} minutes: **{len(every):,} queries** (words, phrases, prefixes with facets, "
        "negated facets, identifiers, error codes) sent to `autodoc serve --stdio` in a separate process, while "
        f"this process edited a random file and re-indexed it without pause (**{edits:,} edits**, holding the "
        "writer lease). Every tenth query asks for the token the last finished edit wrote.",
        "",
        "| | figure |",
        "|---|---:|",
        f"| query errors | **{errors}** |",
        f"| edit (index) errors | **{len(edit_errors)}** |",
        f"| queries for the last committed edit that found nothing | {stale} of {checked} |",
        f"| latency p50 / p95 / p99 (ms, round trip) | {percentile(every, .5):.1f} / {percentile(every, .95):.1f} / "
        f"{percentile(every, .99):.1f} |",
        f"| database + WAL size before / after (MB) | {size_before:.0f} / {size_after:.0f} |",
        "",
        "Over time (each row one minute):",
        "",
        "| minute | queries | errors | p50 ms | p95 ms | p99 ms | server RSS MB | writer RSS MB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for number, minute in enumerate(minutes, 1):
        lat = minute.latencies
        lines.append(
            f"| {number} | {len(lat)} | {minute.errors} | {percentile(lat, .5):.1f} | {percentile(lat, .95):.1f} | "
            f"{percentile(lat, .99):.1f} | {statistics.median(minute.server_rss or [float('nan')]):.0f} | "
            f"{statistics.median(minute.writer_rss or [float('nan')]):.0f} |")
    if edit_errors:
        lines += ["", "Edit errors (first five):", "", *(f"- `{e}`" for e in edit_errors[:5])]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=250_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="doc/benchmarks/soak.md")
    args = parser.parse_args()
    lines = soak(args)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
