"""Embedding providers: one small interface, four implementations.

``local`` (default) runs all-MiniLM-L6-v2 in-process (``minilm``); ``tei`` calls a Text
Embeddings Inference server; ``openai`` any OpenAI-compatible ``/v1/embeddings``; ``cohere`` the
Cohere SDK (any Cohere-compatible server via ``url``). Every provider returns L2-normalised
float32 rows and is identified by ``model_fp`` = provider:model:dimensions:normalisation.
API keys are read from the environment variable the configuration names, at call time only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from autodoc_core.errors import invalid_params, whole_number
from autodoc_core.providers.base import (
    Meter,
    bearer,
    check_provider_config,
    check_seconds,
    check_url,
    cohere_api_error,
    cohere_client,
    in_background_thread,
    tei_model_id,
)
from autodoc_core.providers.http import ProviderError, post_json, with_retries

if TYPE_CHECKING:  # onnxruntime loads with the model, on first use
    from autodoc_core.providers.onnx_encoder import OnnxEncoder as Encoder

LOG = logging.getLogger("autodoc.encoder")
PROVIDERS = ("local", "tei", "openai", "cohere", "none")
DEFAULT_EMBEDDER = {"provider": "local"}
DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
BULK_WORKERS = max(1, min(os.cpu_count() or 1, 4))
# The background fill leaves one core to searches and the editor: with both cores busy encoding (even at
# nice 10) a search competes for caches and memory bandwidth, not only for the CPU. While no search runs
# in this process, an idle-core worker takes that core too (``idle_core``).
BACKGROUND_WORKERS = max(1, min((os.cpu_count() or 1) - 1, BULK_WORKERS))
QUERY_CACHE_SIZE = 256
RETRY_LOAD_SECONDS = 60.0  # a local encoder that failed to load is tried again after this
QUERY_TIMEOUT = 5.0  # seconds a query embedding may take (longer when the search waits longer for it)
MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")
EMBEDDER_KEYS = {"provider", "url", "model", "model_dir", "api_key_env", "timeout", "retries", "batch_size"}


def normalise(rows: Any, expected: int) -> np.ndarray:
    try:
        matrix = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        raise ProviderError("the embedding answer is not a list of number lists") from None
    if matrix.ndim != 2 or matrix.shape[0] != expected or matrix.shape[1] == 0:
        raise ProviderError(f"expected {expected} vectors, got an array of shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ProviderError("the embedding answer contains NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, np.float32(1e-12))


class Embedder:
    provider = "base"
    batch_size = 32
    remote = True  # calls leave the process, so a search bounds them with a deadline

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.meter = Meter()
        self.model = str(config.get("model") or "")
        self.dimensions: int | None = None
        self._query_cache: dict[tuple[str, str], np.ndarray] = {}
        self.query_wait = 0.0  # the workspace's semantic_deadline: a query's call may take this long
        self.checked_for: set[int] = set()  # workspaces whose stored vectors this process found to be this model's
        self._cache_lock = threading.Lock()

    @property
    def encoder_name(self) -> str:
        """What computed the vectors, for the answer: the provider, or the local runtime."""
        return self.provider

    @property
    def model_fp(self) -> str:
        return f"{self.provider}:{self.model}:{self.dimensions or '?'}:l2"

    def describe(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "dimensions": self.dimensions,
                "model_fp": self.model_fp, "calls": self.meter.as_dict()}

    def embed(self, texts: list[str], kind: str = "document") -> np.ndarray:
        """``kind`` is "document" or "query" (providers that distinguish them use it)."""
        if kind == "query" and len(texts) == 1:
            return self._cached_query(texts[0])
        return self._embed_all(texts, kind)

    def _cached_query(self, text: str) -> np.ndarray:
        """A picker re-runs the same query on every stage toggle: remember the last few vectors."""
        key = (self.model_fp, text)
        with self._cache_lock:
            hit = self._query_cache.get(key)
        if hit is not None:
            return hit
        vector = self._embed_all([text], "query")
        with self._cache_lock:
            if len(self._query_cache) >= QUERY_CACHE_SIZE:
                self._query_cache.pop(next(iter(self._query_cache)))
            self._query_cache[key] = vector
        return vector

    def _embed_all(self, texts: list[str], kind: str) -> np.ndarray:
        rows = []
        for start in range(0, len(texts), self.batch_size):
            part = texts[start : start + self.batch_size]
            with self.meter.measure(len(part)):
                matrix = self._embed_batch(part, kind)
            if self.dimensions is None:
                self.dimensions = int(matrix.shape[1])
            elif matrix.shape[1] != self.dimensions:
                raise ProviderError(f"the model changed dimensions from {self.dimensions} to {matrix.shape[1]}")
            rows.append(matrix)
        return np.vstack(rows) if rows else np.zeros((0, self.dimensions or 0), dtype=np.float32)

    def probe(self) -> None:
        """Learn the model's dimensions (one tiny call) so ``model_fp`` is complete."""
        if self.dimensions is None:
            self.embed(["dimension probe"], "query")

    def _embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        raise NotImplementedError

    def _timeout(self, kind: str = "document") -> float:
        """A query's call is bounded tighter: the search stops waiting after its semantic_deadline (2 s by
        default), and a hanging server would otherwise keep a thread and a socket per keystroke for
        timeout x (retries + 1), 90 s by default. So: the longer of QUERY_TIMEOUT and that deadline."""
        timeout = float(self.config.get("timeout", 30.0))
        return min(timeout, max(QUERY_TIMEOUT, self.query_wait)) if kind == "query" else timeout

    def _retries(self, kind: str = "document") -> int:
        return 0 if kind == "query" else int(self.config.get("retries", 2))



class LocalEmbedder(Embedder):
    """A BERT-family model folder run in-process on onnxruntime (``onnx_encoder``). The encoder loads
    on first use, or earlier in a thread of its own (``warm_up``) in a long-lived process."""

    provider = "local"
    batch_size = 64
    remote = False

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        from autodoc_core.providers.minilm import default_model_dir, read_config

        custom = config.get("model_dir")
        self.model_dir = Path(custom).expanduser() if custom else default_model_dir()
        model_config = read_config(self.model_dir)
        self.model = self.model or (self.model_dir.name if custom else DEFAULT_LOCAL_MODEL)
        self.dimensions = int(model_config["hidden_size"])
        self._encoder: Encoder | None = None
        self._failure: str | None = None
        self._retry_at = 0.0
        self._load_lock = threading.Lock()
        self._warming: threading.Thread | None = None

    def warm_up(self) -> None:
        """Load the encoder in a background thread now, so the first search finds it ready (a search
        that comes sooner waits for it on the load lock)."""
        with self._cache_lock:
            if self._warming is None and self._encoder is None:
                self._warming = threading.Thread(target=self._warm, name="autodoc-encoder-warm-up", daemon=True)
                self._warming.start()

    def finish_warming(self, timeout: float) -> None:
        """Wait (up to ``timeout`` s) for a load under way: a process that exits while onnxruntime builds its
        session in another thread can abort in onnxruntime's teardown instead of ending quietly."""
        thread = self._warming
        if thread is not None:
            thread.join(timeout)

    def _warm(self) -> None:
        with contextlib.suppress(ProviderError):  # said in status and in each answer that needs it
            self.encoder  # noqa: B018 - loading is the point

    @property
    def encoder(self) -> Encoder:
        """The loaded encoder; ProviderError when it cannot load. A failed load is tried again after
        RETRY_LOAD_SECONDS (a model folder back in place, a repaired install), not at every query; a
        reason is logged once."""
        with self._load_lock:
            if self._encoder is None and (self._failure is None or time.monotonic() >= self._retry_at):
                self._encoder, failure = load_encoder(self.model_dir)
                if failure and failure != self._failure:
                    LOG.warning("local encoder unavailable, the semantic stage is skipped: %s", failure)
                self._failure, self._retry_at = failure, time.monotonic() + RETRY_LOAD_SECONDS
            if self._encoder is None:
                raise ProviderError(self._failure or "the local encoder did not load")
            return self._encoder

    @property
    def encoder_name(self) -> str:
        return self._encoder.runtime if self._encoder is not None else "onnxruntime"

    def describe(self) -> dict[str, Any]:
        from autodoc_core.providers.idle_core import SEARCHES

        return {**super().describe(), "encoder": self.encoder_state(), "fill": SEARCHES.state()}

    def encoder_state(self) -> dict[str, Any]:
        """The encoder, its graph and whether the graph is cached; without loading anything."""
        from autodoc_core.providers.onnx_encoder import cached_graph

        if self._encoder is not None:
            return {"name": self._encoder.runtime, "loaded": True, **self._encoder.graph.as_dict()}
        state = "failed" if self._failure else "loading" if self._warming else "not loaded"
        return {"name": "onnxruntime", "loaded": False, "state": state, **cached_graph(self.model_dir).as_dict(),
                **({"problem": self._failure} if self._failure else {})}

    def _embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        if kind != "query" and in_background_thread() and BACKGROUND_WORKERS < BULK_WORKERS:
            return self.encoder.embed(texts, workers=BACKGROUND_WORKERS, idle_core=True)
        workers = 1 if kind == "query" else bulk_workers()
        return self.encoder.embed(texts, workers=workers)


def load_encoder(model_dir: Path) -> tuple[Encoder | None, str | None]:
    """The encoder for the folder, or why there is none; a problem met on the way (a corrupt cached graph
    rebuilt, a cache folder not writable) is logged here and kept in the encoder's status."""
    try:
        from autodoc_core.providers.onnx_encoder import OnnxEncoder

        encoder = OnnxEncoder(model_dir)
    except ImportError as exc:
        reason = (f"the local encoder cannot run: {exc.name or 'onnxruntime'} cannot be imported ({exc}); "
                  "reinstall with make install (or pip install onnxruntime onnx)")
    except Exception as exc:  # onnxruntime and onnx raise types of their own; any of them ends here
        reason = f"cannot load the model in {model_dir} on onnxruntime: {exc}"
    else:
        if encoder.graph.problem:
            LOG.warning("local encoder: %s", encoder.graph.problem)
        return encoder, None
    return None, reason


def bulk_workers() -> int:
    """Encoder threads for a batch of documents: fewer in the background fill's thread."""
    return BACKGROUND_WORKERS if in_background_thread() else BULK_WORKERS


class TeiEmbedder(Embedder):
    """Text Embeddings Inference: POST /embed {"inputs", "truncate", "normalize"} -> [[float]]."""

    provider = "tei"

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.url = check_url(config, "embedder")
        self.batch_size = int(config.get("batch_size", 32))

    def probe(self) -> None:
        if not self.model:
            self.model = tei_model_id(self.url, self._timeout(), bearer(self.config), self._retries())
        super().probe()

    def _embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        body = {"inputs": texts, "truncate": True, "normalize": True}
        answer = with_retries(lambda: post_json(f"{self.url}/embed", body, self._timeout(kind), bearer(self.config)),
                              self._retries(kind))
        return normalise(answer, len(texts))


class OpenAIEmbedder(Embedder):
    """OpenAI-compatible: POST /v1/embeddings {"model", "input", "encoding_format": "float"}."""

    provider = "openai"

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.url = check_url(config, "embedder")
        if not self.model:
            raise invalid_params("the openai embedder needs 'model'")
        self.batch_size = int(config.get("batch_size", 64))

    def _embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        body = {"model": self.model, "input": texts, "encoding_format": "float"}
        url = self.url if self.url.endswith("/v1/embeddings") else f"{self.url.removesuffix('/v1')}/v1/embeddings"
        answer = with_retries(lambda: post_json(url, body, self._timeout(kind), bearer(self.config)),
                              self._retries(kind))
        try:
            items = sorted(answer["data"], key=lambda item: item["index"])
            rows = [item["embedding"] for item in items]
        except (KeyError, TypeError):
            raise ProviderError("the answer has no data[].embedding list") from None
        return normalise(rows, len(texts))


class CohereEmbedder(Embedder):
    """The cohere SDK's ClientV2.embed; ``url`` points it at a Cohere-compatible server."""

    provider = "cohere"

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        if not self.model:
            raise invalid_params("the cohere embedder needs 'model'")
        self.batch_size = int(config.get("batch_size", 96))
        self._client = None

    def _client_for_call(self) -> Any:
        if self._client is None:
            self._client = cohere_client(self.config, self._timeout(), self._retries())
        return self._client

    def _embed_batch(self, texts: list[str], kind: str) -> np.ndarray:
        import cohere

        client = self._client_for_call()
        input_type = "search_query" if kind == "query" else "search_document"
        try:
            answer = client.embed(model=self.model, texts=texts, input_type=input_type, embedding_types=["float"],
                                  request_options={"timeout": self._timeout(kind), "max_retries": self._retries(kind)})
            rows = answer.embeddings.float_
        except cohere.core.api_error.ApiError as exc:
            raise cohere_api_error("embed", exc, self.config) from None
        except Exception as exc:  # the SDK raises httpx and pydantic errors of many kinds
            raise ProviderError(f"cohere embed failed: {type(exc).__name__}") from None
        return normalise(rows, len(texts))


def validate_embedder(value: Any) -> dict[str, Any]:
    if value == "local":
        return dict(DEFAULT_EMBEDDER)
    value = check_provider_config(value, "embedder", EMBEDDER_KEYS, PROVIDERS, '{"provider": "local"}')
    if value is None:
        return {"provider": "none"}
    provider = value["provider"]
    if provider in ("tei", "openai"):
        check_url(value, "embedder")
    if provider == "local" and value.get("model_dir"):
        folder = Path(str(value["model_dir"])).expanduser()
        missing = [name for name in MODEL_FILES if not (folder / name).is_file()]
        if missing:
            raise invalid_params(f"model_dir {str(folder)!r} lacks {', '.join(missing)}")
    if provider in ("openai", "cohere") and not value.get("model"):
        raise invalid_params(f"the {provider} embedder needs 'model'")
    check_seconds(value, "embedder", "timeout", 600)
    _check_count(value, "batch_size", 1, 2048)  # 0 looped for ever; a negative one read every chunk at once
    _check_count(value, "retries", 0, 10)  # each retry doubles the wait: 40 held the fill for days
    return dict(value)


def _check_count(config: dict[str, Any], key: str, low: int, high: int) -> None:
    value = config.get(key)
    if key in config and not whole_number(value, low, high):
        raise invalid_params(f"embedder '{key}' must be a whole number from {low} to {high}, got {value!r}")


def make_embedder(config: dict[str, Any]) -> Embedder | None:
    provider = config.get("provider", "local")
    if provider == "none":
        return None
    return {"local": LocalEmbedder, "tei": TeiEmbedder, "openai": OpenAIEmbedder, "cohere": CohereEmbedder}[
        provider
    ](config)
