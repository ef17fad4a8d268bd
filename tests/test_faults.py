"""Providers that hang or fall over: a search still answers (per-stage deadlines), other workspaces
keep filling, and a failing provider is retried with backoff, not in a tight loop."""

from __future__ import annotations

import time
from pathlib import Path

from autodoc_core.service.engine import Engine
from tests.conftest import paths, search, wait_until, write
from tests.model_servers import Behaviour, model_server
from tests.semantic_corpus import embed_with_tei, notes

# Longer than any deadline below; the provider's own timeout is longer still. A search must answer
# within HANG / 3 of a 0.3 s deadline: the duration is the behaviour here, with 30x slack.
HANG = 30.0


def test_a_hanging_embedding_provider_cannot_hold_a_search(engine, kb: Path) -> None:
    notes(kb)
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url, semantic_deadline=0.3)
        server.behaviour.delay = HANG
        began = time.monotonic()
        answer = search(engine, "packets between hosts")
        waited = time.monotonic() - began
    assert waited < HANG / 3
    assert answer["stages"]["performed"] == ["lexical"]
    assert "did not answer within the 0.3 s deadline" in answer["stages"]["skipped"]["semantic"]
    assert paths(answer) == ["network.md"]


def test_a_hanging_ranker_cannot_hold_a_search(engine, kb: Path) -> None:
    notes(kb)
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none", "rerank_deadline": 0.3})
    engine.workspace_index("kb")
    with model_server("tei", Behaviour(delay=HANG)) as server:
        ranker = {"provider": "tei", "url": server.url, "model": "x", "timeout": 60}
        engine.workspace_configure("kb", {"ranker": ranker})
        began = time.monotonic()
        answer = search(engine, "sockets")
        waited = time.monotonic() - began
    assert waited < HANG / 3
    assert answer["rank"]["state"] == "error" and "deadline" in answer["rank"]["error"]
    assert paths(answer) == ["network.md"]


def test_a_dead_provider_backs_off_and_does_not_hold_up_other_workspaces(tmp_path: Path) -> None:
    broken_root, fine_root = tmp_path / "broken", tmp_path / "fine"
    for root in (broken_root, fine_root):
        for i in range(20):
            write(root, f"n{i}.md", f"# Note {i}\n\nbody {i} of {root.name}\n")
    with model_server("tei", Behaviour(fail_status=[500] * 1000)) as broken, model_server("tei") as fine, \
            Engine(tmp_path / "autodoc.db") as engine:
        # "a-broken" sorts first: the filler meets the failing provider before the working one.
        for name, root, server in (("a-broken", broken_root, broken), ("b-fine", fine_root, fine)):
            engine.workspace_add(name, str(root))
            engine.workspace_configure(name, {"embedder": {"provider": "tei", "url": server.url, "retries": 0}})
            engine.workspace_index(name)
        engine.start_background()
        wait_until(lambda: engine.workspace_status("b-fine")["semantic"] == "ready", timeout=120,
                   what="the working workspace to fill while the other one fails")
        calls = wait_until(lambda: broken.behaviour.requests[:3] if len(broken.behaviour.requests) >= 3 else None,
                           what="the failing provider's third call")
        status = engine.workspace_status("a-broken")
    assert status["semantic"] == "partial"
    assert "HTTP 500" in status["embedder"]["progress"]["error"]
    # Each call is asked after the backoff that followed the previous failure (1 s, then 2 s): a slow machine
    # only widens the gaps, a tight loop would make them a few milliseconds.
    gaps = [later["at"] - earlier["at"] for earlier, later in zip(calls, calls[1:], strict=False)]
    assert gaps[0] >= 1.0 and gaps[1] >= 2.0, gaps


def test_the_background_fill_runs_below_searches(tmp_path: Path) -> None:
    """The filler thread (and the encoder threads it starts) run at nice 10, so searches in the same
    process (the editor's host, serve --stdio) get the cores first. Linux gives each thread its own
    nice value; what that buys in latency is measured by make bench (filling vs idle)."""
    import os
    import threading

    with Engine(tmp_path / "autodoc.db") as engine:
        engine.start_background()
        filler = wait_until(lambda: next((t for t in threading.enumerate() if t.name == "autodoc-embedder"), None),
                            what="the embedder thread")
        wait_until(lambda: os.getpriority(os.PRIO_PROCESS, filler.native_id) == 10, timeout=30,
                   what="the filler to lower its priority")
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == 0  # this (search) thread is not


def test_the_background_fill_leaves_a_core_to_searches() -> None:
    """A local model run from the background fill's thread starts one encoder thread fewer than a
    foreground index run (at least one): searches and the editor keep a core. What it buys is measured by
    make bench (filling vs idle)."""
    import os
    import threading

    from autodoc_core.providers import embedders
    from autodoc_core.providers.base import mark_background_thread

    seen: list[int] = []

    def background() -> None:
        mark_background_thread()
        seen.append(embedders.bulk_workers())

    thread = threading.Thread(target=background)
    thread.start()
    thread.join()
    assert embedders.bulk_workers() == embedders.BULK_WORKERS  # this thread is not marked
    assert seen == [max(1, min(embedders.BULK_WORKERS, (os.cpu_count() or 1) - 1))]
