"""The local sentence encoder on onnxruntime: the graph ``onnx_graph`` writes, cached on disk.

The graph is written at first use from the model folder's ``config.json`` and ``model.safetensors``
and kept in ``$XDG_DATA_HOME/autodoc/onnx/`` (``AUTODOC_ONNX_CACHE`` overrides), one file per model
fingerprint: the config's bytes, the weights file's path, size and modification time, the graph
writer's version and onnxruntime's. A model that changes gets a new file; a cached file onnxruntime
cannot load is rebuilt once; a folder that cannot be written keeps the graph in memory, and says so.

One session serves every caller with one intra-op thread and no spinning, so a query takes one core
and leaves the other to the background filler; bulk embedding runs its batches in worker threads
on that same session (``Session.run`` is thread-safe), and the background fill takes the second core
only while no search runs (``idle_core``).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from autodoc_core.providers import onnx_graph
from autodoc_core.providers.idle_core import run_sharing

MAX_TOKENS = 256
# Padded tokens per pass (texts are sorted by length, so padding stays small). 1,024 rather than 4,096: a pass of
# 4 texts of 256 tokens keeps its attention scores (about 12 MB a layer) nearly in cache, 16 of them (50 MB) do
# not; on 2 cores the larger passes took 17% more CPU for the same texts (doc/benchmarks/fill-gap.md), and a
# search ends the background fill's idle-core pass sooner (it is redone).
BATCH_TOKENS = 1024
IDLE_CORE_BATCH_TOKENS = BATCH_TOKENS
CACHE_ENV = "AUTODOC_ONNX_CACHE"
SAMPLE_BYTES = 1 << 20


@dataclass
class GraphStatus:
    """Where the session's graph came from, for status and ``:checkhealth``."""

    path: str | None  # the cached file, None when it lives in memory only
    cached: bool  # it was loaded from the cache (False: written, or built, in this process)
    problem: str | None = None  # what went wrong on the way (a corrupt cache rebuilt, a folder not writable)

    def as_dict(self) -> dict[str, Any]:
        return {"graph": self.path, "cached": self.cached, "problem": self.problem}


def default_cache_dir() -> Path:
    """``$AUTODOC_ONNX_CACHE``, else ``$XDG_DATA_HOME/autodoc/onnx`` (beside the default database)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "autodoc" / "onnx"


def model_fingerprint(model_dir: Path) -> str:
    """Changes when the config, the weights file or the graph's writer or runtime change. The weights are
    known by size, modification time and their first and last MiB (hashing 90 MB would cost a status call
    a third of a second); a copy of the folder shares its original's graph."""
    weights = model_dir / "model.safetensors"
    stat = weights.stat()
    digest = hashlib.sha256((model_dir / "config.json").read_bytes())
    with weights.open("rb") as data:
        digest.update(data.read(SAMPLE_BYTES))
        data.seek(max(0, stat.st_size - SAMPLE_BYTES))
        digest.update(data.read(SAMPLE_BYTES))
    digest.update(json.dumps([stat.st_size, stat.st_mtime_ns, onnx_graph.GRAPH_VERSION, runtime_version()]).encode())
    return digest.hexdigest()[:16]


def runtime_version() -> str:
    """onnxruntime's version from its metadata: status asks without importing it."""
    try:
        return metadata.version("onnxruntime")
    except metadata.PackageNotFoundError:
        return "absent"


def cached_graph(model_dir: Path) -> GraphStatus:
    """Where the model's graph is or would be cached, and whether it is there (nothing is loaded)."""
    try:
        path = graph_path(model_dir)
    except OSError as exc:
        return GraphStatus(None, cached=False, problem=f"the model folder cannot be read: {exc}")
    return GraphStatus(str(path), cached=path.is_file())


def graph_path(model_dir: Path, cache_dir: Path | None = None) -> Path:
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in model_dir.resolve().name)[:40]
    if slug == "model":  # the default package's folder is called "model": name it after its package
        slug = model_dir.resolve().parent.name
    return (cache_dir or default_cache_dir()) / f"{slug}-{model_fingerprint(model_dir)}.onnx"


def _session_options() -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only: nothing reaches stderr on a normal run
    return options


def _session(source: str | bytes) -> Any:
    import onnxruntime as ort

    return ort.InferenceSession(source, _session_options(), providers=["CPUExecutionProvider"])


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def open_session(model_dir: Path, cache_dir: Path | None = None) -> tuple[Any, GraphStatus]:
    """A session on the model's graph: the cached file, or one written now (and cached when possible).
    Raises ImportError (no onnxruntime or onnx), OSError (unreadable model), ValueError (not a BERT
    model, or a graph onnxruntime refuses even freshly built)."""
    import onnxruntime  # noqa: F401 - first, so that its absence is said as such, not as a corrupt cache

    path = graph_path(model_dir, cache_dir)
    problem = None
    if path.is_file():
        try:
            return _session(str(path)), GraphStatus(str(path), cached=True)
        except Exception as exc:  # onnxruntime raises its own error types for a bad file
            problem = f"the cached graph {path} could not be loaded ({_short(exc)}); rebuilt"
            path.unlink(missing_ok=True)
    data = onnx_graph.build_model(model_dir).SerializeToString()
    try:
        _write_atomically(path, data)
        where: str | None = str(path)
        _remove_older_graphs(path)
    except OSError as exc:
        problem = f"cannot write the graph to {path.parent} ({exc.strerror or exc}); it is kept in memory"
        where = None
    try:
        session = _session(data)
    except Exception as exc:
        raise ValueError(f"onnxruntime refused the graph written for {model_dir}: {_short(exc)}") from None
    return session, GraphStatus(where, cached=False, problem=problem)


def _remove_older_graphs(path: Path) -> None:
    """Graphs of the same model folder's earlier versions (90 MB each for MiniLM) go when a new one is written."""
    slug = path.name.rsplit("-", 1)[0]
    for old in path.parent.glob(f"{slug}-*.onnx"):
        if old != path and old.name.rsplit("-", 1)[0] == slug:
            old.unlink(missing_ok=True)


def _short(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__


class OnnxEncoder:
    """Encode texts to unit vectors with onnxruntime. Thread-safe."""

    runtime = "onnxruntime"

    def __init__(self, model_dir: str | Path, max_tokens: int = MAX_TOKENS, cache_dir: Path | None = None) -> None:
        from tokenizers import Tokenizer

        self.model_dir = Path(model_dir)
        config = json.loads((self.model_dir / "config.json").read_text())
        self.hidden = int(config["hidden_size"])
        self.max_tokens = min(max_tokens, int(config.get("max_position_embeddings", 512)))
        self.tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_tokens)
        self.tokenizer.no_padding()
        self.session, self.graph = open_session(self.model_dir, cache_dir)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(e.ids) for e in self.tokenizer.encode_batch(texts)]

    def embed(self, texts: list[str], batch_tokens: int = BATCH_TOKENS, workers: int = 1,
              idle_core: bool = False) -> np.ndarray:
        """One L2-normalised float32 row per text, in input order; batches of similar lengths, run in
        ``workers`` threads when there are several, or (``idle_core``: the background fill) in this thread
        and, while no search runs, an idle-core worker beside it (``idle_core.run_sharing``)."""
        if not texts:
            return np.zeros((0, self.hidden), dtype=np.float32)
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        batches = _batches(ids, IDLE_CORE_BATCH_TOKENS if idle_core else batch_tokens)
        result = np.empty((len(ids), self.hidden), dtype=np.float32)
        if idle_core and len(batches) > 1:
            import onnxruntime as ort

            rows = run_sharing(batches, lambda b, options: self._run([ids[i] for i in b], options), ort.RunOptions,
                               steady=workers)
            for batch, batch_rows in zip(batches, rows, strict=True):
                result[batch] = batch_rows
        elif workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                for batch, rows in zip(batches, pool.map(lambda b: self._run([ids[i] for i in b]), batches),
                                       strict=True):
                    result[batch] = rows
        else:
            for batch in batches:
                result[batch] = self._run([ids[i] for i in batch])
        return result

    def _run(self, sequences: list[list[int]], options: Any = None) -> np.ndarray:
        width = max(len(s) for s in sequences)
        input_ids = np.zeros((len(sequences), width), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for row, sequence in enumerate(sequences):
            input_ids[row, : len(sequence)] = sequence
            mask[row, : len(sequence)] = 1
        return self.session.run(None, {"input_ids": input_ids, "attention_mask": mask}, options)[0]


def _batches(ids: list[list[int]], batch_tokens: int) -> list[list[int]]:
    """Indices sorted by length, cut so that a batch's padded size stays within ``batch_tokens``."""
    batches: list[list[int]] = []
    batch: list[int] = []
    for index in sorted(range(len(ids)), key=lambda i: len(ids[i])):
        if batch and (len(batch) + 1) * len(ids[index]) > batch_tokens:
            batches.append(batch)
            batch = []
        batch.append(index)
    if batch:
        batches.append(batch)
    return batches
