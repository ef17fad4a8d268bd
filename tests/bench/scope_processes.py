"""Would processes bring a search of four workspaces within 1.5x one workspace's (issue 49)? Measured, not built.

The product searches a scope's workspaces in threads of one process (``service.scoped``): CPython runs one thread's
Python at a time, so four workspaces take about twice one. This benchmark runs the same per-workspace searches
(``Engine._search_one``, the query embedded once and its vector sent) in helper processes, each an ``Engine`` on
the same database, and merges their answers with the product's merge (``search.scope.merged``):

- **threads**: the product (``Engine.search_query`` of "*");
- **one helper**: the caller searches two workspaces in its threads, a helper process the other two;
- **two helpers**: the caller only embeds the query and merges; each helper searches two workspaces.

Each search's hits are checked to be the product's. The one-workspace median is the product's, interleaved with
the others in one run, as ``tests.bench.scope``'s speed tables.

    python -m tests.bench.scope_processes --shared ../shared --db /tmp/scope.db   # the database scope.py built
"""

from __future__ import annotations

import argparse
import multiprocessing
import pickle
import statistics
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import numpy as np

from autodoc_core.providers.base import Pending
from autodoc_core.retrieve.semantic_stage import QueryVectors
from autodoc_core.search.scope import merged
from autodoc_core.service import scoped
from autodoc_core.service.engine import Engine
from tests.bench.scope import SPEED_REPEATS, _forget_query_vectors, query_sets

WORKSPACES = ("techdocs", "scifact", "keps", "rfcs")
OPTIONS = {"snippets": False}  # made once for the merged hits, as the product does


class _Inbox:
    """A helper's messages by kind: a search asked, and later the query's vector for it."""

    def __init__(self, pipe: Connection) -> None:
        self._pipe, self._got, self._ready = pipe, {"search": [], "vector": []}, threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                kind, *body = self._pipe.recv()
            except EOFError:  # the caller ended
                return
            with self._ready:
                self._got[kind].append(body)
                self._ready.notify_all()

    def take(self, kind: str) -> list:
        with self._ready:
            self._ready.wait_for(lambda: self._got[kind])
            return self._got[kind].pop(0)


class _SentVector(QueryVectors):
    """The query's vector as the caller sends it: the helper's searches wait for it instead of embedding."""

    def __init__(self, inbox: _Inbox) -> None:
        super().__init__()
        self._vector = Pending(lambda: inbox.take("vector")[0], name="bench-sent-vector")

    def get(self, model: str, text: str, start: object) -> tuple[Pending[np.ndarray], bool]:
        return self._vector, False


def _helper(pipe: Connection, db: str) -> None:
    engine = Engine(db)
    inbox = _Inbox(pipe)
    pipe.send("ready")
    while True:
        names, text = inbox.take("search")
        shared = _SentVector(inbox)
        pipe.send(pickle.dumps([(name, engine._search_one(name, text, OPTIONS, None, shared)) for name in names]))


class _Helpers:
    def __init__(self, db: Path, count: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipes = []
        for _ in range(count):
            mine, theirs = context.Pipe()
            context.Process(target=_helper, args=(theirs, str(db)), daemon=True).start()
            self.pipes.append(mine)
        for pipe in self.pipes:
            assert pipe.recv() == "ready"


def _embedder(engine: Engine):
    engine.search_query(WORKSPACES[0], "warm the encoder", {})
    return next(e for runtime in engine._semantic._runtimes.values() for e in runtime.embedders.values() if e)


def _merged(engine: Engine, answers: dict):
    parts = [engine._part(name) for name in WORKSPACES]
    for part in parts:
        part.answer = answers[part.name]
    whole = merged(engine._scope("*"), parts, 10, {})
    engine._with_snippets(whole, {})
    return whole


def one_helper(engine: Engine, helpers: _Helpers, text: str):
    """The caller searches the first two workspaces in its threads (embedding the query, sent on to the helper
    as soon as it is made); the helper searches the other two."""
    pipe = helpers.pipes[0]
    pipe.send(("search", list(WORKSPACES[2:]), text))

    class Forwarded(QueryVectors):
        def get(self, model, query_text, start):
            def forwarded() -> Pending[np.ndarray]:
                made = start()

                def send() -> np.ndarray:
                    vector = made.result()
                    pipe.send(("vector", vector))
                    return vector
                return Pending(send, name="bench-forward-vector")
            return super().get(model, query_text, forwarded)

    shared, answers = Forwarded(), {}

    def run(part) -> None:
        answers[part.name] = engine._search_one(part.name, text, OPTIONS, None, shared)

    scoped._side_by_side(run, [engine._part(name) for name in WORKSPACES[:2]])
    answers.update(pickle.loads(pipe.recv()))
    return _merged(engine, answers)


def two_helpers(engine: Engine, helpers: _Helpers, embedder, text: str):
    """Each helper searches two workspaces; the caller embeds the query, sends it, and merges."""
    for pipe, names in zip(helpers.pipes, (WORKSPACES[:2], WORKSPACES[2:]), strict=True):
        pipe.send(("search", list(names), text))
    vector = embedder.embed([text], "query")[0]
    for pipe in helpers.pipes:
        pipe.send(("vector", vector))
    answers = {}
    for pipe in helpers.pipes:
        answers.update(pickle.loads(pipe.recv()))
    return _merged(engine, answers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[3] / "shared")
    parser.add_argument("--db", type=Path, required=True, help="the database tests.bench.scope built (--db)")
    args = parser.parse_args()
    queries = [(ws, q["query"]) for _, ws, qs, tuning in query_sets(args.shared) if not tuning for q in qs][::3]
    with Engine(args.db) as engine:
        embedder = _embedder(engine)
        first, second = _Helpers(args.db, 1), _Helpers(args.db, 2)
        ways = {"one workspace (the product)": lambda ws, text: engine.search_query(ws, text, {}),
                "four, threads (the product)": lambda ws, text: engine.search_query("*", text, {}),
                "four, one helper process": lambda ws, text: one_helper(engine, first, text),
                "four, two helper processes": lambda ws, text: two_helpers(engine, second, embedder, text)}
        for ws, text in queries[:30]:  # each process reads its vector indexes and pages once
            for way in ways.values():
                way(ws, text)
        times: dict[str, list[float]] = {label: [] for label in ways}
        differ = 0
        for _ in range(SPEED_REPEATS):
            for ws, text in queries:
                product = None
                for label, way in ways.items():
                    _forget_query_vectors(engine)
                    started = time.perf_counter()
                    answer = way(ws, text)
                    times[label].append((time.perf_counter() - started) * 1000)
                    hits = [(hit.workspace, hit.chunk_id) for hit in answer.hits]
                    if label.startswith("four, threads"):
                        product = hits
                    elif product is not None and hits != product:
                        differ += 1
    one = statistics.median(times["one workspace (the product)"])
    print("| search | median ms | ratio to one workspace |\n|---|---|---|")
    for label, ms in times.items():
        print(f"| {label} | {statistics.median(ms):.1f} | {statistics.median(ms) / one:.2f} |")
    print(f"\n{len(queries)} queries x {SPEED_REPEATS} rounds, every stage, limit 10; merged lists unlike the "
          f"product's: {differ}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
