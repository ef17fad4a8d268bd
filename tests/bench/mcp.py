"""``make bench`` (a step of it): the MCP ``search`` round trip next to ``search.query`` over
``serve --stdio``, measured in the same run on the same database, and the MCP server's start-up.

Indexes ``shared/data/techdocs`` lexically (embedder "none": no model, no vectors), then sends the
techdocs dev queries, in rounds, to four servers on that one database, each query to all four in a
rotating order so machine noise falls on all of them alike:

- ``serve --stdio``: ``search.query`` as one JSON line (the reference);
- ``autodoc mcp`` spoken to in raw JSON lines, ``search`` with the default 2,000-token section texts;
- the same with ``max_tokens: 0`` (hits without texts: the protocol's cost alone);
- ``autodoc mcp`` through the SDK's own ``ClientSession`` (adds the client library's parsing and its
  output-schema validation, as an agent's client pays them).

Writes ``doc/benchmarks/mcp.md``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from autodoc_core.service.engine import Engine
from tests.bench.retrieval import load_queries, percentile

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE = "techdocs"
LIMIT = 5


def autodoc_command(db: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "autodoc_core", "--db", str(db), *args]


class LineClient:
    """A server on pipes, one JSON message a line each way."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, cwd=ROOT)
        self.ids = itertools.count(1)
        self.last_bytes = 0

    def send(self, message: dict[str, Any]) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: Any) -> dict[str, Any]:
        request_id = next(self.ids)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        line = self.process.stdout.readline()
        self.last_bytes = len(line)
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


class RawMcp(LineClient):
    def __init__(self, db: Path) -> None:
        super().__init__(autodoc_command(db, "mcp"))
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "autodoc-bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def search(self, query: str, **extra: Any) -> dict[str, Any]:
        result = self.request("tools/call", {"name": "search", "arguments": {"query": query, "limit": LIMIT,
                                                                             "workspace": WORKSPACE, **extra}})
        if result.get("isError"):
            raise RuntimeError(result["content"][0]["text"])
        return result["structuredContent"]


def index_techdocs(db: Path, docs: Path) -> dict[str, Any]:
    with Engine(db) as engine:
        engine.workspace_add(WORKSPACE, str(docs))
        engine.workspace_configure(WORKSPACE, {"embedder": "none"})
        began = time.perf_counter()
        report = engine.workspace_index(WORKSPACE)
        seconds = time.perf_counter() - began
        status = engine.workspace_status(WORKSPACE)
    return {"seconds": seconds, "documents": status["documents"], "chunks": status["chunks"], **report}


async def time_startup(db: Path, runs: int) -> dict[str, list[float]]:
    """Spawn to tool list, and spawn to the first search's answer, with the SDK's client."""
    listed, searched = [], []
    params = StdioServerParameters(command=sys.executable, args=autodoc_command(db, "mcp")[1:], cwd=ROOT)
    for _ in range(runs):
        began = time.perf_counter()
        with open(os.devnull, "w") as quiet:
            async with stdio_client(params, errlog=quiet) as (read, send), ClientSession(read, send) as session:
                await session.initialize()
                await session.list_tools()
                listed.append(time.perf_counter() - began)
                await session.call_tool("search", {"query": "rate limiting", "workspace": WORKSPACE})
                searched.append(time.perf_counter() - began)
    return {"listed": listed, "searched": searched}


def measure(calls: dict[str, Callable[[str], Awaitable[None]]]):
    async def run(queries: list[str], rounds: int) -> dict[str, list[float]]:
        names = list(calls)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for number, query in enumerate(q for _ in range(rounds) for q in queries):
            shift = number % len(names)
            for name in names[shift:] + names[:shift]:
                began = time.perf_counter()
                await calls[name](query)
                samples[name].append((time.perf_counter() - began) * 1000)
        return samples

    return run


async def latency(db: Path, queries: list[str], rounds: int) -> dict[str, Any]:
    stdio, raw = LineClient(autodoc_command(db, "serve", "--stdio")), RawMcp(db)
    sizes: dict[str, list[int]] = {"stdio": [], "mcp": []}
    same_hits, trimmed, tokens = [], [], []
    params = StdioServerParameters(command=sys.executable, args=autodoc_command(db, "mcp")[1:], cwd=ROOT)
    try:
        with open(os.devnull, "w") as quiet:
            async with stdio_client(params, errlog=quiet) as (read, send), ClientSession(read, send) as session:
                await session.initialize()

                async def over_stdio(query: str) -> None:
                    stdio.request("search.query", [WORKSPACE, query, {"limit": LIMIT}])
                    sizes["stdio"].append(stdio.last_bytes)

                async def over_mcp(query: str) -> None:
                    answer = raw.search(query)
                    sizes["mcp"].append(raw.last_bytes)
                    trimmed.append(answer["trimmed"])
                    tokens.append(answer["text_tokens"])

                async def over_mcp_without_texts(query: str) -> None:
                    raw.search(query, max_tokens=0)

                async def over_sdk(query: str) -> None:
                    result = await session.call_tool("search", {"query": query, "limit": LIMIT,
                                                                "workspace": WORKSPACE})
                    if result.is_error:
                        raise RuntimeError(result.content[0].text)

                calls = {"stdio": over_stdio, "mcp": over_mcp, "mcp_no_text": over_mcp_without_texts,
                         "sdk": over_sdk}
                await measure(calls)(queries[:5], 1)  # warm every server: engine open, caches, first imports
                for kept in (*sizes.values(), trimmed, tokens):
                    kept.clear()
                for query in queries:
                    reference = stdio.request("search.query", [WORKSPACE, query, {"limit": LIMIT}])["hits"]
                    mine = raw.search(query)["hits"]
                    same_hits.append([(h["path"], h["line_start"]) for h in reference]
                                     == [(h["path"], h["line_start"]) for h in mine])
                samples = await measure(calls)(queries, rounds)
    finally:
        stdio.close()
        raw.close()
    return {"samples": samples, "sizes": sizes, "same_hits": same_hits, "trimmed": trimmed, "tokens": tokens}


def render(corpus: dict[str, Any], queries: int, rounds: int, found: dict[str, Any],
           startup: dict[str, list[float]]) -> list[str]:
    samples = found["samples"]
    reference = statistics.median(samples["stdio"])
    labels = {
        "stdio": "`search.query` over `serve --stdio` (the reference)",
        "mcp": "MCP `search`, section texts (default `max_tokens` 2,000)",
        "mcp_no_text": "MCP `search`, `max_tokens: 0` (hits without texts)",
        "sdk": "MCP `search` through the SDK's `ClientSession`, section texts",
    }
    rows = []
    for name, label in labels.items():
        values = samples[name]
        delta = "" if name == "stdio" else f"{statistics.median(values) - reference:+.2f}"
        rows.append(f"| {label} | {statistics.median(values):.2f} | {percentile(values, .95):.2f} | {delta} |")
    overhead = statistics.median(samples["mcp"]) - reference
    return [
        "# MCP server: search round trip and start-up",
        "",
        f"Generated by `python -m tests.bench.mcp` (a step of `make bench`) on {time.strftime('%Y-%m-%d')}, "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; load average "
        f"{os.getloadavg()[0]:.1f} at the end (other jobs shared the cores: compare the rows, not runs).",
        "",
        f"Corpus: `shared/data/techdocs`, {corpus['documents']:,} files, {corpus['chunks']:,} sections, indexed "
        f"lexically in {corpus['seconds']:.1f} s (embedder \"none\": no model is loaded, semantic is skipped in "
        f"every answer). Queries: the {queries} techdocs dev queries x {rounds} rounds, `limit` {LIMIT}; each query "
        "goes to every server in a rotating order. All servers are separate processes on the same database.",
        "",
        "| round trip, ms | median | p95 | median vs stdio |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        f"**MCP overhead: {overhead:+.2f} ms** at the median (target: within 3 ms of `serve --stdio`). The MCP answer "
        "carries each hit's section text (read from the file, in the structured content and again in the "
        "plain-text rendering), where `search.query` carries a 240-character snippet: median answer "
        f"{statistics.median(found['sizes']['mcp']) / 1024:.1f} KiB against "
        f"{statistics.median(found['sizes']['stdio']) / 1024:.1f} KiB. Section texts per search: median "
        f"{statistics.median(found['tokens']):.0f} tokens; "
        f"{sum(found['trimmed'])} of {len(found['trimmed'])} searches were trimmed to the 2,000-token budget. "
        f"Hits (path and line span, in order) equal to `search.query`'s: {sum(found['same_hits'])} of "
        f"{len(found['same_hits'])} queries.",
        "",
        f"Start-up ({len(startup['listed'])} spawns, the SDK's stdio client): process start to tool list "
        f"median {statistics.median(startup['listed']) * 1000:.0f} ms (p95 "
        f"{percentile(startup['listed'], .95) * 1000:.0f} ms); to the first search's answer median "
        f"{statistics.median(startup['searched']) * 1000:.0f} ms. Most of it is importing the SDK (about 0.5 s of "
        "pydantic models on this machine); the engine (and numpy) are imported in a background thread once the "
        "server runs, so the tool list does not wait for them.",
    ]


async def bench(args: argparse.Namespace) -> list[str]:
    shared = Path(args.shared).resolve()
    queries = [q["query"] for q in load_queries(shared / "eval" / "techdocs-dev.jsonl")]
    work = Path(tempfile.mkdtemp(prefix="autodoc-mcp-bench-"))
    try:
        db = work / "bench.db"
        corpus = index_techdocs(db, shared / "data" / "techdocs" / "docs")
        startup = await time_startup(db, args.spawns)
        found = await latency(db, queries, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return render(corpus, len(queries), args.rounds, found, startup)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--out", default="doc/benchmarks/mcp.md")
    args = parser.parse_args()
    lines = anyio.run(bench, args)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
