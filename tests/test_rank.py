"""The rerank stage against real TEI and Cohere-compatible servers on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from autodoc_core.errors import AutodocError
from tests.conftest import database_bytes, paths, search, write
from tests.model_servers import Behaviour, model_server

SECRET = "co-secret-key-0042"


@pytest.fixture
def ranked_kb(engine, kb: Path):
    """Twelve notes that all match 'alpha' lexically; only some are about 'bread oven'."""
    for i in range(12):
        topic = "bread oven baking" if i % 4 == 0 else "sockets packets hosts"
        write(kb, f"n{i:02d}.md", f"# Note {i}\n\nalpha {topic} {'alpha ' * (12 - i)}\n")
    write(kb, "old.md", "---\nstatus: superseded\nsuperseded_by: n04.md\n---\n# Old\n\nalpha bread oven baking\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    engine.workspace_index("kb")
    return engine


def configure(engine, provider: str, url: str, **extra) -> None:
    engine.workspace_configure("kb", {"ranker": {"provider": provider, "url": url, "window": 10} | extra})


def test_tei_ranker_reorders_the_window(ranked_kb) -> None:
    engine = ranked_kb
    fused = paths(search(engine, "alpha bread", limit=13, stages=["lexical"]))
    with model_server("tei") as server:
        configure(engine, "tei", server.url)
        answer = search(engine, "alpha bread", limit=13)
        assert answer["rank"] == {"state": "ranked", "model": "toy/bag-of-words", "error": None}
        assert answer["stages"]["performed"] == ["lexical", "rerank"]
        ranked, tail = answer["hits"][:10], answer["hits"][10:]
        assert all("rank" in h["via"] and h["rank_score"] is not None for h in ranked)
        assert all(h["rank_score"] is None for h in tail)
        assert [h["path"] for h in tail] == [p for p in fused if p not in {h["path"] for h in ranked}][: len(tail)]
        top_texts = {h["path"] for h in ranked[:3]}
        assert top_texts <= {"n00.md", "n04.md", "n08.md", "old.md"}
        scores = [h["rank_score"] for h in ranked if not h["superseded"]]
        assert scores == sorted(scores, reverse=True)
        order = paths(answer)
        assert order.index("old.md") > order.index("n04.md")  # demotion holds after ranking: never above it
        request = next(r for r in server.behaviour.requests if r["path"] == "/rerank")
        assert set(request["body"]) == {"query", "texts", "raw_scores", "truncate"}
        assert len(request["body"]["texts"]) == 10
        assert all(t.startswith(("Note ", "Old\n")) for t in request["body"]["texts"])  # breadcrumb, then body


def test_rerank_left_out_of_stages_is_never_ranked(ranked_kb) -> None:
    with model_server("tei") as server:
        configure(ranked_kb, "tei", server.url)
        answer = search(ranked_kb, "alpha bread", stages=["lexical"])
        assert answer["rank"]["state"] == "not_requested"
        assert all(h["rank_score"] is None for h in answer["hits"])
        assert not [r for r in server.behaviour.requests if r["path"] == "/rerank"]


@pytest.mark.parametrize("behaviour, expected", [
    (Behaviour(delay=10.0), "timeout after 0.5 s"),  # 20x the client timeout
    (Behaviour(garbage=True), "malformed JSON"),
    (Behaviour(wrong_indices=True), "impossible index"),
    (Behaviour(fail_status=[503, 503]), "HTTP 503"),
    (Behaviour(cut_answer=True), "no usable HTTP answer"),  # failed the whole search before
])
def test_a_failing_ranker_keeps_the_fused_order(ranked_kb, behaviour, expected) -> None:
    fused = paths(search(ranked_kb, "alpha bread", stages=["lexical"]))
    with model_server("tei", behaviour) as server:
        configure(ranked_kb, "tei", server.url, model="cross", timeout=0.5)
        answer = search(ranked_kb, "alpha bread")
    assert paths(answer) == fused
    assert answer["rank"]["state"] == "error" and expected in answer["rank"]["error"]
    assert answer["rank"]["model"] == "cross"
    assert expected in answer["stages"]["skipped"]["rerank"]
    assert "rerank" not in answer["stages"]["performed"]


def test_a_ranker_that_is_down(ranked_kb) -> None:
    with model_server("tei") as server:
        url = server.url
    configure(ranked_kb, "tei", url, model="cross")
    answer = search(ranked_kb, "alpha")
    assert answer["rank"]["state"] == "error" and "cannot reach" in answer["rank"]["error"]
    assert ranked_kb.workspace_status("kb")["ranker"]["calls"]["failures"] == 1


def test_cohere_compatible_ranker_and_the_key(ranked_kb, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MY_RERANK_KEY", SECRET)
    with model_server("cohere") as server:
        configure(ranked_kb, "cohere", server.url, model="rerank-v3.5", api_key_env="MY_RERANK_KEY")
        answer = search(ranked_kb, "alpha bread", limit=13)
        assert answer["rank"] == {"state": "ranked", "model": "rerank-v3.5", "error": None}
        request = server.behaviour.requests[0]
        assert request["path"] == "/v2/rerank" and request["auth"] == f"Bearer {SECRET}"
        assert request["body"]["model"] == "rerank-v3.5" and request["body"]["top_n"] == 10
        assert len(request["body"]["documents"]) == 10
        assert {h["path"] for h in answer["hits"][:3]} <= {"n00.md", "n04.md", "n08.md", "old.md"}
    with model_server("cohere", Behaviour(fail_status=[401, 401])) as server:
        configure(ranked_kb, "cohere", server.url, model="rerank-v3.5", api_key_env="MY_RERANK_KEY")
        failed = search(ranked_kb, "alpha")
        assert failed["rank"]["state"] == "error" and "401" in failed["rank"]["error"]
        assert SECRET not in str(failed) and SECRET not in str(ranked_kb.workspace_status("kb"))
    monkeypatch.delenv("MY_RERANK_KEY")
    configure(ranked_kb, "cohere", server.url, model="rerank-v3.5", api_key_env="MY_RERANK_KEY", window=11)
    keyless = search(ranked_kb, "alpha")
    assert keyless["rank"]["state"] == "error"
    assert keyless["rank"]["error"] == "no API key: set the environment variable MY_RERANK_KEY"
    ranked_kb.store.close()
    assert SECRET.encode() not in database_bytes(tmp_path)


def test_switching_rankers_at_run_time(ranked_kb, monkeypatch) -> None:
    monkeypatch.setenv("CO_API_KEY", "dummy-for-a-self-hosted-server")
    with model_server("tei") as first, model_server("cohere") as second:
        configure(ranked_kb, "tei", first.url, model="first-model")
        assert search(ranked_kb, "alpha")["rank"]["model"] == "first-model"
        ranked_kb.workspace_configure("kb", {"ranker": {"provider": "cohere", "url": second.url,
                                                        "model": "second-model"}})
        assert search(ranked_kb, "alpha")["rank"]["model"] == "second-model"
        ranked_kb.workspace_configure("kb", {"ranker": "none"})
        off = search(ranked_kb, "alpha")
        assert off["rank"]["state"] == "off"
        assert off["stages"]["skipped"]["rerank"] == "no ranker is configured for this workspace"


@pytest.mark.parametrize("ranker", [
    {"provider": "tei", "url": "http://x", "window": 9}, {"provider": "tei", "url": "http://x", "window": 101},
    {"provider": "tei"}, {"provider": "cohere", "url": "http://x"}, {"provider": "x"},
    {"provider": "cohere", "model": "m", "api_key": "inline"},
])
def test_bad_ranker_config_is_invalid_params(ranked_kb, ranker) -> None:
    with pytest.raises(AutodocError) as caught:
        ranked_kb.workspace_configure("kb", {"ranker": ranker})
    assert caught.value.code == -32602


def test_tei_ranker_sends_a_full_window_in_the_servers_batches(engine, kb: Path) -> None:
    """A stock TEI takes at most 32 texts per /rerank (422 above); the default window is 40, so every query
    with 33+ hits came back not re-ranked. The window goes in batches of the limit /info gives, and a huge
    section is cut before it is sent."""
    for i in range(45):
        write(kb, f"n{i:02d}.md", f"# Note {i}\n\nalpha {'bread oven' if i % 5 == 0 else 'sockets'} {'x' * (i * 10)}\n")
    write(kb, "huge.md", "# Huge\n\nalpha " + "crumb " * 50_000 + "\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    engine.workspace_index("kb")
    with model_server("tei") as server:
        engine.workspace_configure("kb", {"ranker": {"provider": "tei", "url": server.url}})  # window 40
        answer = search(engine, "alpha bread", limit=46)
        assert answer["rank"]["state"] == "ranked", answer["rank"]
        assert sum(1 for hit in answer["hits"] if hit["rank_score"] is not None) == 40
        sent = [len(r["body"]["texts"]) for r in server.behaviour.requests if r["path"] == "/rerank"]
        assert sent == [32, 8]
        longest = max(len(t) for r in server.behaviour.requests if r["path"] == "/rerank" for t in r["body"]["texts"])
        assert longest <= 8000
