"""Each remote embedding provider against a real HTTP server on 127.0.0.1 speaking its wire format."""

from __future__ import annotations

import time

import pytest

from autodoc_core.errors import AutodocError
from autodoc_core.providers.embedders import (
    QUERY_TIMEOUT,
    CohereEmbedder,
    OpenAIEmbedder,
    TeiEmbedder,
    make_embedder,
    validate_embedder,
)
from autodoc_core.providers.http import ProviderError
from tests.model_servers import DIMS, Behaviour, model_server, toy_vector

SECRET = "sk-test-5ecret-value"


def test_tei_embeds_in_batches_of_32_and_learns_the_model() -> None:
    with model_server("tei") as server:
        embedder = TeiEmbedder({"provider": "tei", "url": server.url})
        embedder.probe()
        assert embedder.model_fp == f"tei:toy/bag-of-words:{DIMS}:l2"
        texts = [f"text number {i}" for i in range(70)]
        vectors = embedder.embed(texts)
        assert vectors.shape == (70, DIMS)
        assert abs(float(vectors[5] @ toy_vector(texts[5])) - 1) < 1e-5
        embeds = [r for r in server.behaviour.requests if r["path"] == "/embed"]
        assert [len(r["body"]["inputs"]) for r in embeds[1:]] == [32, 32, 6]
        assert embeds[1]["body"]["truncate"] is True
        assert embedder.meter.calls == 4 and embedder.meter.texts == 71


def test_tei_retries_overload_then_succeeds() -> None:
    with model_server("tei", Behaviour(fail_status=[503, 429])) as server:
        embedder = TeiEmbedder({"provider": "tei", "url": server.url, "model": "m", "retries": 2})
        started = time.monotonic()
        assert embedder.embed(["a"]).shape == (1, DIMS)
        assert time.monotonic() - started >= 1.5  # waited 0.5 s, then 1.0 s: backoff, no tight loop
        assert len(server.behaviour.requests) == 3


def test_tei_validation_error_is_not_retried_and_is_readable() -> None:
    with model_server("tei", Behaviour(fail_status=[422])) as server:
        embedder = TeiEmbedder({"provider": "tei", "url": server.url, "model": "m"})
        with pytest.raises(ProviderError) as caught:
            embedder.embed(["a"])
        assert "HTTP 422" in caught.value.reason and "validation failed" in caught.value.reason
        assert len(server.behaviour.requests) == 1
        assert embedder.meter.failures == 1


def test_timeout_and_dead_server_and_garbage() -> None:
    with model_server("tei", Behaviour(delay=10.0)) as server:  # 50x the client timeout
        slow = TeiEmbedder({"provider": "tei", "url": server.url, "model": "m", "timeout": 0.2, "retries": 0})
        with pytest.raises(ProviderError) as caught:
            slow.embed(["a"])
        assert caught.value.reason.startswith("timeout after 0.2 s")
    dead = TeiEmbedder({"provider": "tei", "url": server.url, "model": "m", "retries": 0})
    with pytest.raises(ProviderError) as caught:
        dead.embed(["a"])
    assert "cannot reach" in caught.value.reason
    with model_server("tei", Behaviour(garbage=True)) as server:
        bad = TeiEmbedder({"provider": "tei", "url": server.url, "model": "m"})
        with pytest.raises(ProviderError) as caught:
            bad.embed(["a"])
        assert "malformed JSON" in caught.value.reason


def test_openai_compatible_reorders_by_index_and_sends_the_key(monkeypatch) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", SECRET)
    with model_server("openai") as server:
        embedder = OpenAIEmbedder({"provider": "openai", "url": server.url, "model": "nomic-embed-text",
                                   "api_key_env": "MY_EMBED_KEY"})
        texts = ["alpha beta", "gamma delta", "epsilon"]
        vectors = embedder.embed(texts)
        for row, text in zip(vectors, texts, strict=True):
            assert abs(float(row @ toy_vector(text)) - 1) < 1e-5
        request = server.behaviour.requests[0]
        assert request["path"] == "/v1/embeddings"
        assert request["body"] == {"model": "nomic-embed-text", "input": texts, "encoding_format": "float"}
        assert request["auth"] == f"Bearer {SECRET}"
        for url in (f"{server.url}/v1", f"{server.url}/v1/embeddings"):  # the base_url an OpenAI client takes
            OpenAIEmbedder({"provider": "openai", "url": url, "model": "m"}).embed(["x"])
            assert server.behaviour.requests[-1]["path"] == "/v1/embeddings"


def test_a_query_embedding_is_tried_once_and_bounded(monkeypatch) -> None:
    """A search stops waiting for the query's vector after semantic_deadline; its call used the fill's
    retries and timeout (30 s x 3), so a hanging server kept a thread and a socket per keystroke."""
    with model_server("tei", Behaviour(fail_status=[503] * 6)) as server:
        embedder = TeiEmbedder({"provider": "tei", "url": server.url, "model": "m", "retries": 2, "timeout": 30})
        with pytest.raises(ProviderError):
            embedder.embed(["a query"], "query")
        assert len([r for r in server.behaviour.requests if r["path"] == "/embed"]) == 1
        with pytest.raises(ProviderError):
            embedder.embed(["a section", "another"], "document")
        assert len([r for r in server.behaviour.requests if r["path"] == "/embed"]) == 4  # 1 + 3 tries
    assert embedder._timeout("query") == QUERY_TIMEOUT < embedder._timeout("document") == 30
    embedder.query_wait = 12.0  # a workspace whose searches wait 12 s for the query's vector
    assert embedder._timeout("query") == 12.0


def test_openai_error_shape_is_reported_without_the_key(monkeypatch) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", SECRET)
    with model_server("openai", Behaviour(fail_status=[400])) as server:
        config = {"provider": "openai", "url": server.url, "model": "m", "api_key_env": "MY_EMBED_KEY"}
        embedder = OpenAIEmbedder(config)
        with pytest.raises(ProviderError) as caught:
            embedder.embed(["x"])
        assert "HTTP 400" in caught.value.reason and SECRET not in caught.value.reason


def test_cohere_sdk_against_a_compatible_server(monkeypatch) -> None:
    monkeypatch.setenv("CO_API_KEY", SECRET)
    with model_server("cohere") as server:
        embedder = CohereEmbedder({"provider": "cohere", "url": server.url, "model": "embed-v4.0", "retries": 0})
        vectors = embedder.embed(["first text", "second text"], "document")
        query = embedder.embed(["a question"], "query")
        assert vectors.shape == (2, DIMS) and query.shape == (1, DIMS)
        first, second = server.behaviour.requests
        assert first["path"] == "/v2/embed"
        assert first["body"]["texts"] == ["first text", "second text"]
        assert first["body"]["input_type"] == "search_document"
        assert second["body"]["input_type"] == "search_query"
        assert first["body"]["embedding_types"] == ["float"]
        assert first["auth"] == f"Bearer {SECRET}"


def test_cohere_errors_and_missing_key(monkeypatch) -> None:
    monkeypatch.setenv("CO_API_KEY", SECRET)
    with model_server("cohere", Behaviour(fail_status=[429])) as server:
        embedder = CohereEmbedder({"provider": "cohere", "url": server.url, "model": "m", "retries": 0})
        with pytest.raises(ProviderError) as caught:
            embedder.embed(["x"])
        assert "429" in caught.value.reason and SECRET not in caught.value.reason
        assert "model is overloaded" in caught.value.reason and server.url in caught.value.reason  # what it said
    with model_server("cohere", Behaviour(fail_status=[401], echo_auth=True)) as server:
        embedder = CohereEmbedder({"provider": "cohere", "url": server.url, "model": "m", "retries": 0})
        with pytest.raises(ProviderError) as caught:
            embedder.embed(["x"])
        assert "401" in caught.value.reason and "check the key in CO_API_KEY" in caught.value.reason
        assert SECRET not in caught.value.reason and "[redacted]" in caught.value.reason
    monkeypatch.delenv("CO_API_KEY")
    keyless = CohereEmbedder({"provider": "cohere", "url": server.url, "model": "m"})
    with pytest.raises(ProviderError) as caught:
        keyless.embed(["x"])
    assert "CO_API_KEY" in caught.value.reason


@pytest.mark.parametrize("config", [
    {"provider": "tei"}, {"provider": "openai", "url": "http://x"}, {"provider": "magic"},
    {"provider": "cohere", "model": "m", "api_key": "inline-secret"}, {"provider": "tei", "url": "ftp://x"},
    {"provider": "local", "colour": 1}, 42,
    {"provider": "tei", "url": "http://x", "batch_size": 0}, {"provider": "tei", "url": "http://x", "batch_size": -5},
    {"provider": "tei", "url": "http://x", "batch_size": True}, {"provider": "tei", "url": "http://x", "retries": 40},
])
def test_bad_embedder_configs_are_invalid_params(config) -> None:
    with pytest.raises(AutodocError) as caught:
        validate_embedder(config)
    assert caught.value.code == -32602


def test_none_turns_the_stage_off() -> None:
    assert make_embedder(validate_embedder("none")) is None
