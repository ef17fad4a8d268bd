"""One search followed as it runs (the picker's stream): the lexical answer handed over first, in the final
answer's shape, then the final answer; a newer query stops the run at its next stage boundary. Real engine,
real SQLite file, real HTTP model servers on 127.0.0.1."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from autodoc_core.search.stream import SearchCancelled, SearchStream
from autodoc_core.service.engine import Engine
from tests.conftest import wait_until, write
from tests.model_servers import Behaviour, model_server


@pytest.fixture
def notes(kb: Path) -> Path:
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                             "We keep every workspace in one embedded relational store.\n")
    write(kb, "notes/cooking.md", "# Cooking\n\n## Bread\n\nFlour, water, salt and yeast make bread.\n")
    write(kb, "notes/baking.md", "# Baking\n\n## Ovens\n\nA hot oven bakes bread with a crust.\n")
    return kb


def configure(engine: Engine, kb: Path, url: str, ranker: bool = False) -> None:
    settings = {"embedder": {"provider": "tei", "url": url, "timeout": 120}, "semantic_deadline": 60}
    if ranker:
        settings |= {"ranker": {"provider": "tei", "url": url, "timeout": 120}, "rerank_deadline": 60}
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", settings)
    assert engine.workspace_index("kb", {"wait": "semantic"})["semantic"] == "ready"


def test_the_lexical_answer_comes_first_in_the_final_answer_s_shape(engine: Engine, notes: Path) -> None:
    with model_server("tei") as server:
        configure(engine, notes, server.url, ranker=True)
        partials: list[dict] = []
        final = engine.search("kb", "bread", {"limit": 5}, SearchStream(on_partial=partials.append)).to_wire()
        lexical_only = engine.search_query("kb", "bread", {"limit": 5, "stages": ["lexical"]}).to_wire()
    assert len(partials) == 1
    partial = partials[0]
    assert partial["partial"] is True and "partial" not in final
    assert partial["stages"]["performed"] == ["lexical"]
    assert partial["stages"]["pending"] == ["semantic", "rerank"]
    assert partial["rank"]["state"] == "pending" and final["rank"]["state"] == "ranked"
    assert [h["path"] for h in partial["hits"]] == [h["path"] for h in lexical_only["hits"]]
    assert set(partial) == set(final) | {"partial"}  # the same shape, marked
    assert final["stages"]["performed"] == ["lexical", "semantic", "rerank"]
    assert "partial" in final["timing"]  # the hand-over's own cost is said


def test_a_search_with_nothing_after_the_lexical_stage_answers_once(engine: Engine, notes: Path) -> None:
    engine.workspace_add("kb", str(notes))
    engine.workspace_index("kb")
    partials: list[dict] = []
    final = engine.search("kb", "bread", {"stages": ["lexical"]}, SearchStream(on_partial=partials.append)).to_wire()
    assert partials == [] and final["hits"]


def test_a_cancelled_search_stops_waiting_for_its_embedding_and_never_reranks(engine: Engine, notes: Path) -> None:
    """The query's embedding is held at the server; the search is cancelled meanwhile: it stops at once (before the
    embedding answers) and the ranker never sees the query. Broken on purpose: without the stream's wait on the
    embedding the search only ends after the release, and then reranks."""
    with model_server("tei", Behaviour(hold_texts={"bread"})) as server:
        configure(engine, notes, server.url, ranker=True)
        outcome: list[BaseException | dict] = []
        partials: list[dict] = []
        stream = SearchStream(partials.append)

        def run() -> None:
            try:
                outcome.append(engine.search("kb", "bread", None, stream).to_wire())
            except SearchCancelled as exc:
                outcome.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        assert server.behaviour.holding.wait(timeout=60)
        wait_until(lambda: partials, what="the lexical answer")
        stream.cancel()  # as the host does when a newer query takes the lane
        wait_until(lambda: outcome, what="the cancelled search to end")  # the embedding is still held here
        assert not server.behaviour.release.is_set()
        server.behaviour.release.set()
        worker.join(timeout=60)
        assert isinstance(outcome[0], SearchCancelled) and outcome[0].stage == "semantic"
        assert not [r for r in server.behaviour.requests if r["path"] == "/rerank"]


class ReplacedBefore(SearchStream):
    """A stream whose query is replaced by the time the run reaches ``stage``; it records every boundary."""

    def __init__(self, stage: str) -> None:
        super().__init__()
        self.stage = stage
        self.boundaries: list[str] = []

    def check(self, next_stage: str) -> None:
        self.boundaries.append(next_stage)
        if next_stage == self.stage:
            self.cancel()
        super().check(next_stage)


def test_a_search_cancelled_after_its_embedding_never_calls_the_ranker(engine: Engine, notes: Path) -> None:
    with model_server("tei") as server:
        configure(engine, notes, server.url, ranker=True)
        stream = ReplacedBefore("rerank")
        with pytest.raises(SearchCancelled) as stopped:
            engine.search("kb", "bread", None, stream)
        assert stopped.value.stage == "rerank" and stream.boundaries[0] == "semantic"
        assert not [r for r in server.behaviour.requests if r["path"] == "/rerank"]
        stream = ReplacedBefore("shape")  # replaced while the ranker ran: no snippets for it
        with pytest.raises(SearchCancelled):
            engine.search("kb", "bread", None, stream)
        assert stream.boundaries[-2:] == ["rerank", "shape"]


def test_serve_stdio_streams_a_partial_then_the_answer(engine: Engine, notes: Path, tmp_path: Path) -> None:
    """`search.stream` over `serve --stdio`: a `search.partial` notification (the lexical answer, for the request's
    id), then the response; `search.query` stays one plain answer."""
    import json

    from tests.conftest import StdioServer

    with model_server("tei") as server:
        configure(engine, notes, server.url)
        engine.close()
        stdio = StdioServer(tmp_path / "autodoc.db")
        try:
            plain = stdio.ask("search.query", ["kb", "bread"])
            assert "partial" not in plain["result"]
            message = {"jsonrpc": "2.0", "id": "s1", "method": "search.stream", "params": ["kb", "bread"]}
            stdio.proc.stdin.write(json.dumps(message).encode() + b"\n")
            stdio.proc.stdin.flush()
            first, second = (json.loads(stdio.lines.next(timeout=120)) for _ in range(2))
        finally:
            stdio.close()
    assert first["method"] == "search.partial" and "id" not in first and first["params"]["id"] == "s1"
    partial = first["params"]["answer"]
    assert partial["partial"] is True and partial["stages"]["pending"] == ["semantic"]
    assert second["id"] == "s1" and second["result"]["stages"]["performed"] == ["lexical", "semantic"]
    assert [h["path"] for h in second["result"]["hits"]] == [h["path"] for h in plain["result"]["hits"]]
