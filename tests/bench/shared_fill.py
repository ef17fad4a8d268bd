"""``make bench``, several editors on one database (issue 51.2): the same techdocs documents filled by one editor's
host, then by three on one SQLite file, each scanning its workspace every ``--scan-seconds`` as an editor does
(``scan_ms``; 30 s by default, shorter here to put more scans in a short fill). Each editor is a real engine
process (``tests.workers editor``: the background filler with the local encoder, and the scan loop). The fill is
timed from its first stored batch to the workspace's ``semantic: ready``; ``moves`` counts how often the process
storing a batch was not the one that stored the batch before (the fill changing hands).

    python -m tests.bench.shared_fill --shared ../shared --out doc/benchmarks/shared-fill.md
"""

from __future__ import annotations

import autodoc_core  # noqa: F401 - before numpy, as in the product

# isort: split
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autodoc_core.parse.document import parse_document
from autodoc_core.parse.frontmatter import FacetSchema
from autodoc_core.service.engine import Engine
from autodoc_core.store.workspace import CONFIG_DEFAULTS

PROJECT = Path(__file__).resolve().parents[2]
POLL_SECONDS = 0.5  # the parent polls slowly: its status reads take CPU from the fill it times


def copy_documents(source: Path, into: Path, texts: int) -> int:
    """The first techdocs documents (path order) until they hold ``texts`` chunks; the chunks copied."""
    copied = 0
    for path in sorted(source.rglob("*.md")):
        relative = path.relative_to(source)
        chunks = parse_document(path.read_bytes(), relative.as_posix(), FacetSchema(),
                                CONFIG_DEFAULTS["section_tokens"]).chunks
        (into / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, into / relative)
        copied += len(chunks)
        if copied >= texts:
            break
    return copied


def events(log: Path) -> list[tuple[float, str, int]]:
    if not log.exists():
        return []
    rows = (line.split() for line in log.read_text().splitlines() if line)
    return [(float(at), kind, int(pid)) for kind, pid, at in rows]


def one_fill(root: Path, work: Path, editors: int, scan_seconds: float) -> dict:
    db, log = work / f"{editors}-{time.monotonic_ns()}.db", work / f"{editors}-{time.monotonic_ns()}.log"
    with Engine(db) as setup:
        setup.workspace_add("kb", str(root))
        setup.workspace_index("kb")
    procs = [subprocess.Popen([sys.executable, "-m", "tests.workers", "editor", str(db), str(log), str(scan_seconds)],
                              cwd=PROJECT, stdout=subprocess.DEVNULL) for _ in range(editors)]
    try:
        with Engine(db) as reader:
            while reader.workspace_status("kb")["semantic"] != "ready":
                if any(proc.poll() is not None for proc in procs):
                    raise SystemExit("an editor process ended before the fill did")
                time.sleep(POLL_SECONDS)
            total = reader.workspace_status("kb")["embedder"]["total"]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)
    seen = events(log)
    batches = [(at, pid) for at, kind, pid in seen if kind == "batch"]
    first, last = batches[0][0], batches[-1][0]
    scans = sum(1 for at, kind, _ in seen if kind == "scan" and first <= at <= last)
    moves = sum(1 for (_, a), (_, b) in zip(batches, batches[1:], strict=False) if a != b)
    return {"seconds": last - first, "texts": total, "moves": moves, "scans": scans}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--texts", type=int, default=1200, help="chunks to fill (whole documents, path order)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of one editor and three")
    parser.add_argument("--scan-seconds", type=float, default=5.0)
    parser.add_argument("--note", default="", help="a sentence on the machine, e.g. that it was shared")
    parser.add_argument("--out", default="doc/benchmarks/shared-fill.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="autodoc-shared-fill-") as tmp:
        work, root = Path(tmp), Path(tmp) / "kb"
        root.mkdir()
        chunks = copy_documents(Path(args.shared) / "data" / "techdocs" / "docs", root, args.texts)
        runs: dict[int, list[dict]] = {1: [], 3: []}
        for _ in range(args.rounds):
            for editors in (1, 3):
                runs[editors].append(one_fill(root, work, editors, args.scan_seconds))
                print(editors, runs[editors][-1], flush=True)
    write_report(args, chunks, runs)


def write_report(args: argparse.Namespace, chunks: int, runs: dict[int, list[dict]]) -> None:
    one, three = (statistics.median(run["seconds"] for run in runs[k]) for k in (1, 3))
    texts = runs[1][0]["texts"]
    lines = ["# Several editors on one database: the fill with one editor and with three", "",
             f"{chunks} techdocs chunks ({texts} distinct texts), the default local encoder (all-MiniLM-L6-v2 on "
             f"onnxruntime), {os.cpu_count()} cores, {args.rounds} alternating round(s) ({time.strftime('%Y-%m-%d')}), "
             f"each editor a real engine process scanning every {args.scan_seconds:g} s; seconds from the first "
             "stored batch to `semantic: ready`, medians. `python -m tests.bench.shared_fill` (in `make bench`). "
             + args.note, "",
             "| editors | seconds | texts/s | fill moves | scans by the editors during the fill | vs one |",
             "|---|---|---|---|---|---|"]
    for editors, median in ((1, one), (3, three)):
        moves = "/".join(str(run["moves"]) for run in runs[editors])
        scans = "/".join(str(run["scans"]) for run in runs[editors])
        lines.append(f"| {editors} | {median:.1f} | {texts / median:.1f} | {moves} | {scans} | {median / one:.2f}x |")
    lines += ["", f"Three editors took {three / one:.2f}x one editor's time (the bar: at most 1.10x)."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
