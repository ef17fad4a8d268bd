"""``make bench`` (a step of it): one ``autodoc mcp --http`` process against ``--workers 2`` and against two
read replicas on the same host (``--replica-of``, Litestream to a ``file://`` URL), each with 32 clients; then
the replication lag over N edits on the writer; and each process's memory. Writes
``doc/benchmarks/replica.md``.

The corpus is the HTTP benchmark's (tests/bench/mcp_http.py): SciFact copied and indexed. The 32 clients, each
sending its next search as soon as it is answered, are `wrk` (Debian's package; `apt-get install wrk`) when it
is installed: its connections are C, about 0.1 s of CPU for thousands of searches, where the HTTP benchmark's
own clients (asyncio, in this process, used without wrk) cost about as much CPU as the server they load, so on 2
cores they leave a second server nothing to run on. The load generator's CPU time (user + system) is reported
beside each run either way: it shares the machine's cores with the servers.

The lag: on the writer, a file gets a word of its own and the writer's ``index`` tool indexes it; from the
start of that call, a replica is asked (every 20 ms) until it finds the word. Reported: that whole time, and
the part after the writer's call returned (Litestream shipping, the follower applying, the replica seeing it).

``--docs N --per-client K --edits E --lexical`` make a quick check run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2

from tests.bench.mcp_http import HEADERS, LIMIT, WORKSPACE, HttpServer, Run, concurrent, prepare
from tests.bench.retrieval import load_queries, percentile

ROOT = Path(__file__).resolve().parents[2]


class Served(HttpServer):
    """The HTTP benchmark's server with ``OPTIONS``, no scan (the lag is measured from the writer's index call)."""

    def __init__(self, db: Path, *options: str) -> None:
        super().__init__(db, *options, scan_seconds="0")

    def memory_mib(self) -> dict[str, float]:
        """Resident memory of this server and each of its children (workers, litestream), by command."""
        return {f"{name} (pid {pid})": rss for pid, name, rss in process_tree(self.process.pid)}


def process_tree(pid: int) -> list[tuple[int, str, float]]:
    found = []
    try:
        with open(f"/proc/{pid}/status") as handle:
            fields = dict(line.split(":", 1) for line in handle if ":" in line)
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read().split(b"\0")
    except OSError:
        return found
    role = next((w.decode() for w in words if w in (b"replicate", b"restore", b"--worker-socket")), "server")
    name = {"replicate": "litestream replicate", "restore": "litestream restore -f",
            "--worker-socket": "worker"}.get(role, role)
    found.append((pid, name, int(fields.get("VmRSS", "0 kB").split()[0]) / 1024))
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            found.extend(process_tree(int(child)))
    return found


WRK = shutil.which("wrk")
WRK_SECONDS = 10
# wrk's script: each connection POSTs the searches in turn; a 200 whose tool answer is an error counts as one.
WRK_SCRIPT = """wrk.method = 'POST'
{headers}
local bodies = {{ {bodies} }}
local i = 0
request = function() i = i % #bodies + 1; return wrk.format(nil, nil, nil, bodies[i]) end
local failed = 0
response = function(status, headers, body)
  if status ~= 200 or string.find(body, '"isError": *true') then failed = failed + 1 end
end
done = function(summary, latency, requests)
  io.write(string.format('RESULT %d %d %.3f %.3f %d\\n', summary.requests, summary.duration,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    failed + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
"""


@dataclass
class Measured:
    throughput: float  # searches/s
    p50: float  # ms
    p95: float
    errors: int
    generator_cpu: float  # s


def wrk_script(queries: list[str], path: Path) -> Path:
    headers = "\n".join(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}"
                         for k, v in {**HEADERS, "Content-Type": "application/json"}.items())
    bodies = ", ".join("[==[" + json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "search", "arguments": {"query": q, "limit": LIMIT, "workspace": WORKSPACE}}}) + "]==]"
        for n, q in enumerate(queries))
    path.write_text(WRK_SCRIPT.format(headers=headers, bodies=bodies), encoding="utf-8")
    return path


def wrk_loaded(urls: list[str], clients: int, script: Path) -> Measured:
    """``clients`` connections spread over the servers' URLs (one wrk each) for WRK_SECONDS; the p50 and p95 of
    several servers are the larger of their generators' own."""
    subprocess.run([WRK, "-t1", f"-c{clients // len(urls)}", "-d2s", "-s", str(script), urls[0]], check=True,
                   capture_output=True)  # warm
    began = resource.getrusage(resource.RUSAGE_CHILDREN)
    running = [subprocess.Popen([WRK, "-t1", f"-c{clients // len(urls)}", f"-d{WRK_SECONDS}s", "--timeout", "60s",
                                 "-s", str(script), url], stdout=subprocess.PIPE, text=True) for url in urls]
    results = []
    for process in running:
        out, _ = process.communicate()
        line = next(line for line in out.splitlines() if line.startswith("RESULT"))
        requests, micros, p50, p95, errors = line.split()[1:]
        results.append((int(requests), int(micros) / 1e6, float(p50), float(p95), int(errors)))
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ended.ru_utime - began.ru_utime) + (ended.ru_stime - began.ru_stime)
    seconds = max(r[1] for r in results)
    return Measured(sum(r[0] for r in results) / seconds, max(r[2] for r in results), max(r[3] for r in results),
                    sum(r[4] for r in results), cpu)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def loaded(urls: list[str], per_client: list[list[str]], warm: list[str], script: Path | None) -> Measured:
    """32 clients spread over the servers' URLs: wrk when there is a ``script`` for it, else this process's."""
    if script is not None:
        return wrk_loaded(urls, len(per_client), script)
    for url in urls:
        await concurrent(url, [warm])
    began = cpu_seconds()
    run, started = Run(), time.perf_counter()
    async with anyio.create_task_group() as group:
        for number, queries in enumerate(per_client):
            group.start_soon(_client, urls[number % len(urls)], queries, run)
    run.seconds = time.perf_counter() - started
    return Measured(run.throughput, percentile(run.latencies, 0.5), percentile(run.latencies, 0.95),
                    len(run.errors), cpu_seconds() - began)


async def _client(url: str, queries: list[str], run: Run) -> None:
    from tests.bench.mcp_http import http_client

    await http_client(url, queries, run)


def tool(http: httpx2.Client, url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                  "params": {"name": name, "arguments": {**arguments, "workspace": WORKSPACE}}})
    result = answer.json()["result"]
    if result.get("isError"):
        raise RuntimeError(result["content"][0]["text"])
    return result["structuredContent"]


def replication_lag(writer: Served, replica: Served, root: Path, edits: int) -> tuple[list[float], list[float]]:
    """Per edit: seconds from the writer's index call to the word found on the replica; and after the call."""
    whole, after = [], []
    files = sorted(root.glob("*.md"))
    with httpx2.Client(headers=HEADERS, timeout=120) as http:
        for number in range(edits):
            path = files[number % len(files)]
            word = f"qxlag{number}z"
            path.write_text(path.read_text() + f"\n\nA sentence about {word}.\n")
            began = time.perf_counter()
            tool(http, writer.url, "index", {"paths": [path.name]})
            indexed = time.perf_counter()
            while not tool(http, replica.url, "search", {"query": word, "stages": ["lexical"]})["hits"]:
                if time.perf_counter() - began > 120:
                    raise RuntimeError(f"the replica never showed the edit {word}")
                time.sleep(0.02)
            found = time.perf_counter()
            whole.append(found - began)
            after.append(found - indexed)
    return whole, after


async def bench(args: argparse.Namespace) -> list[str]:
    shared = Path(args.shared).resolve()
    work = Path(tempfile.mkdtemp(prefix="autodoc-replica-bench-"))
    try:
        db, root, corpus = prepare(shared, work, args.docs, args.lexical)
        pool = [q["query"] for q in load_queries(shared / "eval" / "scifact-train.jsonl")]
        per_client = [[pool[(c * args.per_client + i) % len(pool)] for i in range(args.per_client)]
                      for c in range(args.clients)]
        warm = pool[:20]
        script = wrk_script(pool[:200], work / "search.lua") if WRK else None
        runs, memory = {}, {}
        for label, options in (("1 process", ()), ("--workers 2", ("--workers", "2"))):  # the later --workers wins
            server = Served(db, *options)
            try:
                runs[label] = await loaded([server.url], per_client, warm, script)
                memory[label] = server.memory_mib()
            finally:
                server.close()
        storage = (work / "storage").as_uri()
        writer = Served(db, "--replicate-to", storage, "--allow-index")
        replicas: list[Served] = []
        try:
            deadline = time.monotonic() + 120
            while not (work / "storage" / "ltx").exists():
                if time.monotonic() > deadline:
                    raise RuntimeError("nothing shipped to the storage")
                time.sleep(0.2)
            for n in (1, 2):
                (work / f"r{n}").mkdir()
                replicas.append(Served(work / f"r{n}" / "r.db", "--replica-of", storage))
            runs["2 replicas (16 clients each)"] = await loaded([r.url for r in replicas], per_client, warm, script)
            memory["writer (--replicate-to)"] = writer.memory_mib()
            for n, replica in enumerate(replicas, 1):
                memory[f"replica {n}"] = replica.memory_mib()
            lag = replication_lag(writer, replicas[0], root, args.edits)
        finally:
            for server in [writer, *replicas]:
                server.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return render(args, corpus, runs, lag, memory)


def render(args: argparse.Namespace, corpus: dict[str, Any], runs: dict[str, Measured],
           lag: tuple[list[float], list[float]], memory: dict[str, dict[str, float]]) -> list[str]:
    one = runs["1 process"].throughput
    lines = [
        "# Replicas and workers: one process against two, with 32 clients",
        "",
        f"Generated by `make bench` (`python -m tests.bench.replica`) on {platform.machine()}, {os.cpu_count()} "
        f"cores, Python {platform.python_version()}. Corpus: SciFact, {corpus['documents']} documents, "
        f"{corpus['chunks']} sections, {'lexical only' if args.lexical else 'hybrid (the default local model)'}; "
        f"{args.clients} clients, every one sending its next search as soon as it is answered: "
        + (f"`wrk` for {WRK_SECONDS} s a run (p50 and p95 of two replicas: the larger of their two wrk's)"
           if WRK else f"this process's own clients, {args.per_client} searches each (no `wrk` installed)")
        + ". The load generator shares the cores: its CPU time is beside each run.",
        "",
        "Compare the rows of one run: the servers and the load generator share the machine, and a run's rows "
        "were measured one after another on it.",
        "",
        "| configuration | searches/s | vs 1 process | p50 ms | p95 ms | errors | load generator CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, run in runs.items():
        lines.append(f"| {label} | {run.throughput:.1f} | {run.throughput / one:.2f}x | {run.p50:.0f} | "
                     f"{run.p95:.0f} | {run.errors} | {run.generator_cpu:.1f} |")
    whole, after = lag
    lines += [
        "",
        f"With {args.clients} clients that send as soon as they are answered, p95 is about {args.clients} / "
        "throughput (issue 42's finding).",
        "",
        f"## Replication lag over {len(whole)} edits",
        "",
        "| from | median s | p95 s | max s |",
        "|---|---|---|---|",
        f"| the writer's index call starting, to the word searchable on a replica | {percentile(whole, 0.5):.2f} | "
        f"{percentile(whole, 0.95):.2f} | {max(whole):.2f} |",
        f"| the writer's index call answered, to the word searchable on a replica | {percentile(after, 0.5):.2f} | "
        f"{percentile(after, 0.95):.2f} | {max(after):.2f} |",
        "",
        "Litestream ships the writer's WAL every second (its default sync interval) and the follower polls the "
        "storage every 200 ms, so the lag is about a second and at most about 1.2 s plus the apply.",
        "",
        "## Memory (resident, MiB)",
        "",
        "| configuration | process | MiB |",
        "|---|---|---|",
    ]
    for label, processes in memory.items():
        for process, mib in processes.items():
            lines.append(f"| {label} | {process} | {mib:.0f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", default="../shared")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--per-client", type=int, default=25)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--docs", type=int, default=None, help="only the first N documents (a quick check)")
    parser.add_argument("--lexical", action="store_true", help="no embedding model (a quick check)")
    parser.add_argument("--out", default="doc/benchmarks/replica.md")
    args = parser.parse_args()
    lines = anyio.run(bench, args)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
