"""``search.related`` beside a lexical ``search.query`` over one ``serve --stdio`` process: wall medians of
both, the first round apart (a section asked for the first time: its words are not memoised yet), and the
server's CPU time per request (from /proc, summed over each block of requests: on a shared machine a wall
median moves with the load, CPU time much less). Used for techdocs (tests/bench/related.py) and for the
generated million-section workspace (tests/bench/related_million.py)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.bench.retrieval import percentile

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 3


class Stdio:
    def __init__(self, db: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "autodoc_core", "--db", str(db), "serve", "--stdio"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        self.number = 0

    def ask(self, method: str, params: list[Any]) -> tuple[Any, float]:
        assert self.process.stdin and self.process.stdout
        self.number += 1
        message = {"jsonrpc": "2.0", "id": self.number, "method": method, "params": params}
        started = time.perf_counter()
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        answer = json.loads(self.process.stdout.readline())
        ms = (time.perf_counter() - started) * 1000
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer["result"], ms

    def cpu_seconds(self) -> float:
        """The server's user + system CPU time so far (all its threads)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait()


@dataclass
class Timings:
    lexical: list[list[float]] = field(default_factory=list)  # per round
    related: list[list[float]] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=lambda: {"lexical": 0.0, "related": 0.0})  # seconds
    stages: dict[str, int] = field(default_factory=dict)
    laps: dict[str, dict[str, list[float]]] = field(default_factory=lambda: {"lexical": {}, "related": {}})
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after
    first_answer_s: float = 0.0  # the warm-up: imports, and the vectors read into memory

    @staticmethod
    def flat(rounds: list[list[float]]) -> list[float]:
        return [ms for one in rounds for ms in one]


def measure(db: Path, name: str, queries: list[str], sections: list[tuple[str, int]],
            rounds: int = ROUNDS) -> Timings:
    """Rounds of: every query as a lexical search.query, then every section's search.related (limit 10)."""
    server = Stdio(db)
    timings = Timings(load=(os.getloadavg()[0], 0.0))
    try:
        started = time.perf_counter()
        server.ask("search.query", [name, queries[0], {"stages": ["lexical"]}])
        server.ask("search.related", [name, sections[-1][0], {"line": sections[-1][1]}])  # not a measured one
        timings.first_answer_s = time.perf_counter() - started
        for _ in range(rounds):
            timings.lexical.append(_block(server, timings, "lexical", [
                ("search.query", [name, text, {"stages": ["lexical"], "limit": 10}]) for text in queries]))
            timings.related.append(_block(server, timings, "related", [
                ("search.related", [name, path, {"line": line, "limit": 10}]) for path, line in sections]))
    finally:
        server.close()
    timings.load = (timings.load[0], os.getloadavg()[0])
    return timings


def _block(server: Stdio, timings: Timings, kind: str, calls: list[tuple[str, list[Any]]]) -> list[float]:
    spent = []
    cpu_before = server.cpu_seconds()
    for method, params in calls:
        answer, ms = server.ask(method, params)
        spent.append(ms)
        for stage, stage_ms in answer["timing"].items():
            timings.laps[kind].setdefault(stage, []).append(stage_ms)
        if kind == "related":
            key = "+".join(answer["stages"]["performed"])
            timings.stages[key] = timings.stages.get(key, 0) + 1
    timings.cpu[kind] += server.cpu_seconds() - cpu_before
    return spent


def lines(timings: Timings, queries: int, sections: int, what: str) -> list[str]:
    lexical, related = Timings.flat(timings.lexical), Timings.flat(timings.related)
    rounds = len(timings.lexical)
    ratio = statistics.median(related) / statistics.median(lexical)
    first = statistics.median(timings.related[0]) / statistics.median(timings.lexical[0])
    cpu_lexical, cpu_related = (timings.cpu["lexical"] * 1000 / len(lexical),
                                timings.cpu["related"] * 1000 / len(related))
    return [
        "| request | count | median ms | p95 ms | first round median ms | server CPU ms a request (mean) |",
        "|---|---|---|---|---|---|",
        f"| search.query, lexical ({queries} queries x {rounds}) | {len(lexical)} | "
        f"{statistics.median(lexical):.1f} | {percentile(lexical, 0.95):.1f} | "
        f"{statistics.median(timings.lexical[0]):.1f} | {cpu_lexical:.1f} |",
        f"| search.related, a section ({sections} sections x {rounds}) | {len(related)} | "
        f"{statistics.median(related):.1f} | {percentile(related, 0.95):.1f} | "
        f"{statistics.median(timings.related[0]):.1f} | {cpu_related:.1f} |",
        "",
        f"{what}: search.related median / lexical search.query median **{ratio:.2f}** "
        f"({'holds' if ratio <= 1 else 'does NOT hold'}: the target is at most 1); first round alone (each "
        f"section asked for the first time, its words not yet memoised) {first:.2f}; server CPU time a request "
        f"{cpu_related / cpu_lexical:.2f}. Stages performed: "
        + ", ".join(f"{k} ({v})" for k, v in sorted(timings.stages.items()))
        + f". Load average (1 min) {timings.load[0]:.1f} before, {timings.load[1]:.1f} after, on "
        f"{os.cpu_count()} cores; the first answer (imports, vectors read) took {timings.first_answer_s:.1f} s.",
        "", "Stage medians inside the server (ms; `timing` of the answers): " + "; ".join(
            f"{what} " + ", ".join(f"{stage} {statistics.median(values):.2f}" for stage, values in laps.items())
            for what, laps in (("lexical search.query", timings.laps["lexical"]),
                               ("search.related", timings.laps["related"]))) + ".",
    ]
