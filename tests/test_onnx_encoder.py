"""The local encoder on onnxruntime: the same vectors as the numpy encoder it replaced (those stored in
users' databases), its graph cache (written, found, rebuilt when corrupt or when the model changes, kept
in memory when the folder cannot be written), and a missing onnxruntime seen by a real child process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from autodoc_core.providers.minilm import default_model_dir
from autodoc_core.providers.onnx_encoder import OnnxEncoder, graph_path
from tests.conftest import PROJECT, write

FIXTURE = np.load(Path(__file__).parent / "fixtures" / "encoder_reference.npz")
TEXTS = json.loads(str(FIXTURE["texts"]))
REFERENCE = FIXTURE["vectors"]


@pytest.fixture(scope="module")
def encoder() -> OnnxEncoder:
    return OnnxEncoder(default_model_dir())


def cosines(ours: np.ndarray, reference: np.ndarray) -> np.ndarray:
    return (ours * reference).sum(axis=1) / np.linalg.norm(reference, axis=1)


def test_vectors_equal_the_numpy_encoders_one_by_one(encoder: OnnxEncoder) -> None:
    """Queries run one at a time (no padding): long, truncated, empty, punctuation-only, non-ASCII."""
    everything = TEXTS["texts"] + TEXTS["queries"]
    ours = np.vstack([encoder.embed([text]) for text in everything])
    assert cosines(ours, REFERENCE).min() >= 0.99999


def test_vectors_equal_in_padded_batches_and_in_threads(encoder: OnnxEncoder) -> None:
    """Corpus batches pad shorter texts: the mask must make the padding invisible."""
    everything = TEXTS["texts"] + TEXTS["queries"]
    assert max(encoder.count_tokens(everything)) == 256  # some were truncated
    for batch_tokens, workers in ((100_000, 1), (1024, 2)):
        ours = encoder.embed(everything, batch_tokens=batch_tokens, workers=workers)
        assert cosines(ours, REFERENCE).min() >= 0.99999
        assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert encoder.embed([]).shape == (0, 384)


def copy_model(tmp_path: Path, name: str = "my-bert") -> Path:
    folder = tmp_path / name
    shutil.copytree(default_model_dir(), folder)
    return folder


def test_the_graph_is_cached_found_again_and_rebuilt_when_the_model_changes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    folder = copy_model(tmp_path)
    first = OnnxEncoder(folder, cache_dir=cache)
    assert not first.graph.cached and first.graph.path == str(graph_path(folder, cache))
    again = OnnxEncoder(folder, cache_dir=cache)
    assert again.graph.cached and again.graph.path == first.graph.path and again.graph.problem is None
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "layer_norm_eps": 1e-11}))
    changed = OnnxEncoder(folder, cache_dir=cache)
    assert not changed.graph.cached and changed.graph.path != first.graph.path
    assert [p.name for p in cache.glob("*.onnx")] == [Path(changed.graph.path).name]  # the old one went


def test_a_corrupt_cached_graph_is_rebuilt_once_and_works(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = graph_path(default_model_dir(), cache)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x08\x07not a model at all" * 1000)
    encoder = OnnxEncoder(default_model_dir(), cache_dir=cache)
    assert "could not be loaded" in encoder.graph.problem and "rebuilt" in encoder.graph.problem
    assert encoder.graph.path == str(path) and path.stat().st_size > 1_000_000
    assert cosines(encoder.embed(TEXTS["queries"][:3]), REFERENCE[50:53]).min() >= 0.99999
    assert OnnxEncoder(default_model_dir(), cache_dir=cache).graph.cached  # good from now on


def indexed_engine(engine, kb: Path):  # the conftest fixture's Engine
    write(kb, "proxy.md", "# Reverse proxy\n\nThe cache keeps partial byte ranges of large downloads.\n")
    write(kb, "lease.md", "# Writer lease\n\nOne process writes at a time; the others wait for the lease.\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb", {"wait": "semantic"})
    return engine


def test_an_unwritable_cache_folder_keeps_the_graph_in_memory_and_says_so(engine, kb: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache folder would have to be inside this file")
    monkeypatch.setenv("AUTODOC_ONNX_CACHE", str(blocker / "onnx"))
    indexed_engine(engine, kb)
    answer = engine.search_query("kb", "storing pieces of big files", {"stages": ["semantic"]}).to_wire()
    assert answer["hits"][0]["path"] == "proxy.md" and answer["query"]["encoder"] == "onnxruntime"
    encoder = engine.workspace_status("kb")["embedder"]["encoder"]
    assert encoder["name"] == "onnxruntime" and encoder["graph"] is None and not encoder["cached"]
    assert "kept in memory" in encoder["problem"] and str(blocker) in encoder["problem"]


def test_status_names_the_encoder_and_whether_its_graph_is_cached(engine, kb: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTODOC_ONNX_CACHE", str(tmp_path / "cache"))
    engine.workspace_add("kb", str(kb))
    before = engine.workspace_status("kb")["embedder"]["encoder"]
    assert before == {"name": "onnxruntime", "loaded": False, "state": "not loaded",
                      "graph": str(graph_path(default_model_dir(), tmp_path / "cache")), "cached": False,
                      "problem": None}
    engine.start_background()  # a long-lived process loads the encoder in a thread of its own
    status = engine.workspace_status("kb")["embedder"]["encoder"]
    while not status["loaded"]:
        assert status["state"] == "loading"
        time.sleep(0.05)
        status = engine.workspace_status("kb")["embedder"]["encoder"]
    assert status["name"] == "onnxruntime" and status["graph"] == before["graph"]


def test_closing_the_engine_waits_for_the_encoder_still_loading(engine, kb: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that ended while another thread built the onnxruntime session could abort in onnxruntime's
    teardown (`serve --stdio` with a closed pipe, once in a full run under load: status -6, "terminate called")."""
    monkeypatch.setenv("AUTODOC_ONNX_CACHE", str(tmp_path / "cache"))  # nothing cached: the load writes the graph
    engine.workspace_add("kb", str(kb))
    engine.start_background()
    assert engine.workspace_status("kb")["embedder"]["encoder"]["state"] == "loading"
    engine.close()
    embedders = [e for runtime in engine._semantic._runtimes.values() for e in runtime.embedders.values()]
    assert embedders and all(not e._warming.is_alive() for e in embedders if e._warming is not None)


BLOCK_ONNXRUNTIME = """
import sys

class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "onnxruntime" or name.startswith("onnxruntime."):
            raise ImportError(f"No module named {name!r} (blocked by the test)", name=name)
        return None

sys.meta_path.insert(0, _Blocked())
"""


def test_without_onnxruntime_searches_answer_and_say_why_semantic_was_skipped(engine, kb: Path,
                                                                               tmp_path: Path) -> None:
    """A child process whose sitecustomize blocks the onnxruntime import (our code is not touched)."""
    indexed_engine(engine, kb)
    engine.close()
    blocker = tmp_path / "site"
    write(blocker, "sitecustomize.py", BLOCK_ONNXRUNTIME)
    env = {**os.environ, "PYTHONPATH": f"{blocker}{os.pathsep}{PROJECT}"}

    def call(method: str, params: list) -> dict:
        done = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(engine.store.path), "--call",
                               method, json.dumps(params)], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    answer = call("search.query", ["kb", "keeping byte ranges of big downloads"])
    assert answer["hits"] and "semantic" not in answer["stages"]["performed"]
    assert "onnxruntime cannot be imported" in answer["stages"]["skipped"]["semantic"]
    encoder = call("workspace.status", ["kb"])["embedder"]["encoder"]
    assert encoder["name"] == "onnxruntime" and encoder["cached"]  # status needs no import


def test_a_model_folder_put_back_is_loaded_again(engine, kb: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed load is tried again after RETRY_LOAD_SECONDS (here 0), not only in a new process."""
    from autodoc_core.providers import embedders
    from autodoc_core.service.engine import Engine

    folder = copy_model(tmp_path, "moving")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": {"provider": "local", "model_dir": str(folder)}})
    indexed_engine(engine, kb)
    monkeypatch.setattr(embedders, "RETRY_LOAD_SECONDS", 0.0)
    (folder / "model.safetensors").rename(tmp_path / "weights")
    with Engine(engine.store.path) as fresh:  # a new process's engine: its encoder loads at its first query
        answer = fresh.search_query("kb", "keeping byte ranges of big downloads").to_wire()
        assert "cannot load the model" in answer["stages"]["skipped"]["semantic"] and answer["hits"]
        (tmp_path / "weights").rename(folder / "model.safetensors")
        later = fresh.search_query("kb", "keeping byte ranges of big downloads", {"limit": 4}).to_wire()
    assert "semantic" in later["stages"]["performed"] and later["query"]["encoder"] == "onnxruntime"
