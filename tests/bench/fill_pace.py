"""``make bench``, the fill against the encoder's own pace, and searches while it fills (issue 51.13). One run:

1. pace: the encoder in a tight loop over the RFCs' section texts (one ``embed`` call, the default workers),
   then ``serve --stdio`` filling the same texts from an empty database, in alternating rounds. The fill is timed
   from ``workspace.index``'s answer (the lexical index written) to ``semantic: ready``, and from the server's
   start. Target: the fill within 1.2x of the tight loop (medians).
2. searches while it fills: a ``serve --stdio`` filling, and a headless Neovim whose host fills, each searched
   after a pause (``--pause``, 3 s) with the fill running and with it paused (``embedding.pause``), in
   alternating blocks; every search is a query no search before it asked. Over stdio: ``search.query`` round
   trips, lexical and hybrid. In the picker: a key typed after the pause, to the first and to the final list.
   Target: with the fill running, within 1.5x of the fill paused (medians).

    python -m tests.bench.fill_pace --shared ../shared --out doc/benchmarks/fill-gap.md

The tables above ``FINDINGS`` in the file are replaced by each run; from that heading on, the file is kept.
"""

from __future__ import annotations

import autodoc_core  # noqa: F401 - before numpy, as in the product

# isort: split
import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from autodoc_core.parse.document import parse_document
from autodoc_core.parse.frontmatter import FacetSchema
from autodoc_core.providers.embedders import BULK_WORKERS, LocalEmbedder
from autodoc_core.providers.onnx_encoder import BATCH_TOKENS
from autodoc_core.service.engine import Engine
from autodoc_core.store.workspace import CONFIG_DEFAULTS
from tests.bench.picker import Server, arm, open_picker, start_neovim, stop_neovim, wait_final
from tests.waiting import wait_until

WORKSPACE = "rfcs"
FINDINGS = "## What the runs say"  # written by hand: a run keeps it
POLL_SECONDS = 1.0  # the fill's status is read this often: each read takes CPU from the fill it times


def copy_rfcs(source: Path, into: Path, sections: int) -> int:
    """The RFCs in path order until they hold ``sections`` sections (0: all); the sections copied."""
    copied = 0
    for path in sorted(source.glob("*.md")):
        copied += len(parse_document(path.read_bytes(), path.name, FacetSchema(),
                                     CONFIG_DEFAULTS["section_tokens"]).chunks)
        shutil.copyfile(path, into / path.name)
        if sections and copied >= sections:
            break
    return copied


def section_texts(db: Path) -> tuple[list[str], list[str]]:
    """The distinct section texts as the fill sends them, and one query per heading (shuffled, fixed seed)."""
    with Engine(db) as engine, engine.store.snapshot() as conn:
        rows = conn.execute("SELECT text_hash, breadcrumb, body FROM chunks ORDER BY doc_id, ord").fetchall()
    texts = list({h: (f"{crumb}\n{body}" if body else crumb) for h, crumb, body in rows}.values())
    headings = {" ".join(crumb.split(" > ")[-1].split()[:4]).lower() for _, crumb, _ in rows}
    queries = sorted(q for q in headings if len(q) > 8 and q.isascii())
    random.Random(51).shuffle(queries)
    return texts, queries


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tight_loop(texts: list[str]) -> dict[str, float]:
    encoder = LocalEmbedder({"provider": "local"}).encoder
    encoder.embed(texts[:16])
    started, cpu = time.perf_counter(), time.process_time()
    encoder.embed(texts, workers=BULK_WORKERS)
    return {"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu}


def served_fill(root: Path, work: Path) -> dict[str, float]:
    """``serve --stdio`` from an empty database to ``semantic: ready``."""
    started = time.perf_counter()
    server = Server(work / f"fill-{time.monotonic_ns()}.db", WORKSPACE)
    try:
        server.ask("workspace.add", [WORKSPACE, str(root)])
        server.ask("workspace.index", [WORKSPACE])
        indexed, cpu = time.perf_counter(), process_cpu(server.process.pid)
        while server.ask("workspace.status", [WORKSPACE])["semantic"] != "ready":
            time.sleep(POLL_SECONDS)
        ready = time.perf_counter()
        return {"seconds": ready - indexed, "from_start": ready - started,
                "cpu": process_cpu(server.process.pid) - cpu}
    finally:
        server.close()


def filler_state(ask: Callable[[str, list], dict]) -> str:
    return ask("workspace.status", [WORKSPACE])["filler"]["state"]


def alternate(blocks: int, per_block: int, pause: float, queries: list[str], sample: Callable[[str], dict],
              set_paused: Callable[[bool], None], still_filling: Callable[[], bool]) -> dict[str, list[dict]]:
    """Blocks of searches after a pause, the fill running then paused, ``blocks`` times each."""
    samples: dict[str, list[dict]] = {"filling": [], "paused": []}
    fresh = iter(queries)
    for _ in range(blocks):
        for load in ("filling", "paused"):
            set_paused(load == "paused")
            for _ in range(per_block):
                time.sleep(pause)
                samples[load].append(sample(next(fresh)))
            if load == "filling" and not still_filling():
                raise SystemExit("the fill ended during a filling block: use more --sections")
    set_paused(False)
    return samples


def stdio_searches(db: Path, args: argparse.Namespace, queries: list[str]) -> dict[str, list[dict]]:
    server = Server(db, WORKSPACE)

    def set_paused(paused: bool) -> None:
        server.ask("embedding.pause" if paused else "embedding.resume", [])
        wait_until(lambda: filler_state(server.ask) == ("paused" if paused else "filling"), timeout=300,
                   what="the server's filler to pause or fill")

    def sample(text: str) -> dict:
        return {name: server.round_trip(text, stages) for name, stages in
                (("lexical", ["lexical"]), ("hybrid", ["lexical", "semantic"]))}

    try:
        server.ask("workspace.index", [WORKSPACE])  # starts the filler
        wait_until(lambda: server.embedded() > 0, timeout=300, what="the first batch")
        return alternate(args.blocks, args.per_block, args.pause, queries, sample, set_paused,
                         lambda: server.ask("workspace.status", [WORKSPACE])["semantic"] != "ready")
    finally:
        server.close()


HOST_ASK = """local method, params = ...
_G.bench_answer = nil
require('autodoc.rpc').request(method, params, function(_, result) _G.bench_answer = result or vim.NIL end)"""


def picker_searches(db: Path, root: Path, work: Path, args: argparse.Namespace,
                    queries: list[str]) -> dict[str, list[dict]]:
    nvim = start_neovim(db, root, work, WORKSPACE)

    def ask(method: str, params: list) -> dict:
        nvim.exec_lua(HOST_ASK, method, params)
        return wait_until(lambda: nvim.exec_lua("return _G.bench_answer"), timeout=120, what=method)

    def set_paused(paused: bool) -> None:
        ask("embedding.pause" if paused else "embedding.resume", [])
        wait_until(lambda: filler_state(ask) == ("paused" if paused else "filling"), timeout=300,
                   what="the host's filler to pause or fill")

    def sample(text: str) -> dict:
        """The picker open with all of ``text`` but its last character answered; after the pause, that key."""
        nvim.exec_lua("_G.autodoc_bench_entries = {}")
        token = arm(nvim)
        nvim.exec_lua("local s, text = require('autodoc.picker').state, ...; "
                      "vim.api.nvim_buf_set_lines(s.prompt_buf, 0, -1, false, { text }); "
                      "vim.api.nvim_win_set_cursor(s.prompt_win, { 1, #text })", text[:-1])
        wait_final(nvim, text[:-1], token)
        time.sleep(args.pause)
        nvim.exec_lua("_G.autodoc_bench_entries = {}")
        token = arm(nvim)
        nvim.input(text[-1] if text[-1] != "<" else "<lt>")
        wait_final(nvim, text, token)
        entries = nvim.exec_lua("return _G.autodoc_bench_entries")
        return {f"level {e['level']}": e["ms"] for e in entries if e.get("query") == text}

    try:
        wait_until(lambda: ask("workspace.status", [WORKSPACE])["embedder"]["embedded"] > 0, timeout=300,
                   what="the host's first batch")
        open_picker(nvim, semantic=True)
        return alternate(args.blocks, args.per_block, 0.0, queries, sample, set_paused,
                         lambda: ask("workspace.status", [WORKSPACE])["semantic"] != "ready")
    finally:
        stop_neovim(nvim)


def lexical_database(root: Path, work: Path, name: str) -> Path:
    db = work / name
    with Engine(db) as engine:
        engine.workspace_add(WORKSPACE, str(root))
        engine.workspace_index(WORKSPACE)
    return db


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--sections", type=int, default=0, help="the first RFCs holding this many (0: all)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--pause", type=float, default=3.0)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--per-block", type=int, default=4)
    parser.add_argument("--skip-picker", action="store_true")
    parser.add_argument("--note", default="")
    parser.add_argument("--out", default="doc/benchmarks/fill-gap.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="autodoc-fill-pace-") as tmp:
        work, root = Path(tmp), Path(tmp) / "rfcs"
        root.mkdir()
        sections = copy_rfcs(Path(args.shared) / "data" / "rust-rfcs" / "text", root, args.sections)
        texts, queries = section_texts(lexical_database(root, work, "texts.db"))
        pace: dict[str, list[dict[str, float]]] = {"tight": [], "fill": []}
        for _ in range(args.rounds):
            pace["tight"].append(tight_loop(texts))
            pace["fill"].append(served_fill(root, work))
            print({k: v[-1] for k, v in pace.items()}, flush=True)
        searches = {"serve --stdio": stdio_searches(lexical_database(root, work, "stdio.db"), args, queries)}
        print(searches, flush=True)
        if not args.skip_picker:
            searches["picker"] = picker_searches(lexical_database(root, work, "picker.db"), root, work, args,
                                                 queries[len(queries) // 2:])
            print(searches["picker"], flush=True)
    write_report(args, sections, len(texts), pace, searches)


def write_report(args: argparse.Namespace, sections: int, texts: int, pace: dict[str, list[dict[str, float]]],
                 searches: dict[str, dict[str, list[dict]]]) -> None:
    tight = statistics.median(r["seconds"] for r in pace["tight"])
    fill = statistics.median(r["seconds"] for r in pace["fill"])
    lines = ["# The fill against the encoder's own pace, and searches while it fills", "",
             f"{sections} Rust RFC sections ({texts} distinct texts), all-MiniLM-L6-v2 on onnxruntime, "
             f"{os.cpu_count()} cores, passes of {BATCH_TOKENS} tokens, {args.rounds} alternating round(s) "
             f"({time.strftime('%Y-%m-%d')}). `python -m tests.bench.fill_pace` (in `make bench`). {args.note}", "",
             "## The fill's pace", "",
             "| way | seconds (rounds) | texts/s | CPU seconds (rounds) |", "|---|---|---|---|"]
    for name, label in (("tight", f"encoder, tight loop, {BULK_WORKERS} workers"),
                        ("fill", "`serve --stdio` fill, index answered to semantic ready")):
        rounds = ", ".join(f"{r['seconds']:.1f}" for r in pace[name])
        cpu = ", ".join(f"{r['cpu']:.1f}" for r in pace[name])
        median = statistics.median(r["seconds"] for r in pace[name])
        lines.append(f"| {label} | {median:.1f} ({rounds}) | {texts / median:.1f} | {cpu} |")
    starts = ", ".join(f"{r['from_start']:.1f}" for r in pace["fill"])
    lines += ["", f"The fill against the tight loop: **{fill / tight:.2f}x** (target <= 1.2x). From the server's start "
              f"(the lexical index and the model's load included): {starts} s.", "",
              f"## A search after a {args.pause:g} s pause, the fill running and paused", "",
              "Medians in ms, every search a query not asked before; blocks of "
              f"{args.per_block} alternate, {args.blocks} of each.", "",
              "| where | search | fill running | fill paused | ratio (target <= 1.5x) | samples |",
              "|---|---|---|---|---|---|"]
    for where, loads in searches.items():
        for kind in sorted({k for sample in loads["paused"] for k in sample}):
            filling = [s[kind] for s in loads["filling"] if kind in s]
            paused = [s[kind] for s in loads["paused"] if kind in s]
            if filling and paused:
                running, idle = statistics.median(filling), statistics.median(paused)
                label = {"level 1": "key to first list", "level 2": "key to final list"}.get(kind, kind)
                lines.append(f"| {where} | {label} | {running:.1f} | {idle:.1f} | {running / idle:.2f}x | "
                             f"{len(filling)}+{len(paused)} |")
    out = Path(args.out)
    kept = out.read_text().partition(FINDINGS) if out.exists() else ("", "", "")
    out.write_text("\n".join(lines) + "\n" + (f"\n{FINDINGS}{kept[2]}" if kept[1] else ""))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
