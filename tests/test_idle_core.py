"""The background fill takes the idle core while no search runs and gives it back when one starts: two
fill workers when idle, one while a search runs, and a search that starts during an idle-core pass ends
that pass (its batch is redone). Observed through status and checkpoints, never through timing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from autodoc_core.index.checkpoints import Hold
from autodoc_core.providers.minilm import default_model_dir
from autodoc_core.providers.onnx_encoder import OnnxEncoder
from autodoc_core.service.engine import Engine
from tests.conftest import paths, search, wait_until, write

TOPICS = ["glacier", "compiler", "orchard", "telescope", "harbour", "violin", "volcano", "ledger"]


def fill_state(engine: Engine) -> dict:
    return engine.workspace_status("kb")["embedder"]["fill"]


@pytest.fixture
def many_notes(kb: Path) -> Path:
    """Enough sections that one fill batch makes several encoder passes."""
    for number in range(24):
        topic = TOPICS[number % len(TOPICS)]
        body = " ".join(f"The {topic} note {number} says sentence {i} about {topic} things." for i in range(14))
        write(kb, f"notes/{topic}-{number}.md", f"# {topic.title()} {number}\n\n## Part one\n\n{body}\n\n"
                                                f"## Part two\n\n{body} More about the {topic}.\n")
    return kb


@pytest.fixture
def filling(engine: Engine, many_notes: Path) -> Iterator[Engine]:
    engine.workspace_add("kb", str(many_notes))
    engine.workspace_index("kb")
    yield engine


def search_in_thread(engine: Engine) -> threading.Thread:
    thread = threading.Thread(target=engine.search, args=("kb", "glacier", {"stages": ["lexical"]}), daemon=True)
    thread.start()
    return thread


def test_filling_uses_two_workers_while_no_search_runs(filling: Engine) -> None:
    before = fill_state(filling)["passes"]
    with Hold("encode.steady", 1) as steady, Hold("encode.idle_core_claimed", 1) as idle:
        filling.start_background()
        assert steady.arrived.wait(120) and idle.arrived.wait(120)
        state = fill_state(filling)
        assert state["fill_workers"] == 2 and state["searches"] == 0
    wait_until(lambda: filling.workspace_status("kb")["semantic"] == "ready", timeout=300, what="the fill")
    after = fill_state(filling)["passes"]
    assert after["idle_core"] > before["idle_core"] and after["steady"] > before["steady"]


def test_filling_drops_to_one_worker_while_a_search_runs(filling: Engine) -> None:
    before = fill_state(filling)["passes"]
    with Hold("search.running", 1) as held_search:
        searcher = search_in_thread(filling)
        assert held_search.arrived.wait(60)
        with Hold("encode.steady", 2) as steady:
            filling.start_background()
            assert steady.arrived.wait(120)
            state = fill_state(filling)
            assert state["fill_workers"] == 1 and state["searches"] == 1
        wait_until(lambda: filling.workspace_status("kb")["semantic"] == "ready", timeout=100, what="the fill")
        after = fill_state(filling)["passes"]
    searcher.join(60)
    assert after["idle_core"] == before["idle_core"] and after["steady"] > before["steady"] + 1


def test_a_search_ends_the_idle_core_pass_at_once_and_its_batch_is_redone(filling: Engine) -> None:
    before = fill_state(filling)["passes"]
    with Hold("encode.idle_core_claimed", 1) as idle:
        filling.start_background()
        assert idle.arrived.wait(120)
        with Hold("search.running", 1) as held_search:
            searcher = search_in_thread(filling)
            assert held_search.arrived.wait(60)
            idle.release.set()  # its forward pass starts with the search running: onnxruntime ends it
            wait_until(lambda: fill_state(filling)["passes"]["given_back"] == before["given_back"] + 1,
                       what="the idle-core pass to be given back")
    searcher.join(60)
    wait_until(lambda: filling.workspace_status("kb")["semantic"] == "ready", timeout=300, what="the fill")
    assert paths(search(filling, "an icy river of the mountains", stages=["semantic"]))[0].startswith("notes/glacier-")


def test_the_shared_passes_give_the_same_vectors_in_the_same_order() -> None:
    encoder = OnnxEncoder(default_model_dir())
    texts = [f"{TOPICS[i % 8]} " * (1 + (i * 7) % 60) + f"number {i}" for i in range(40)]
    shared = encoder.embed(texts, idle_core=True)
    plain = encoder.embed(texts)
    assert shared.shape == plain.shape and (shared * plain).sum(axis=1).min() >= 0.99999
    assert np.allclose(np.linalg.norm(shared, axis=1), 1.0, atol=1e-5)
