"""What a list says is true: every list the engine returns (search in every stage combination, with and without
re-ranking, facet-only listings, the stream's partial answers, related sections) comes in non-increasing
``relevance``, superseded documents below their successor in every mode, and in a sentence an identifier's
symbol-only hits below the sections that match the sentence. Real engine, real SQLite file, the bundled
knowledge base (doc/kb) and Rust RFCs from the shared data, real HTTP model servers on 127.0.0.1."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from autodoc_core.search.stream import SearchStream
from autodoc_core.service.engine import Engine
from tests.model_servers import model_server

ROOT = Path(__file__).resolve().parents[1]
RFCS = ROOT.parent / "shared" / "data" / "rust-rfcs" / "text"
# The RFCs the example names, and enough others that mention crates.io that a sentence's word search
# fills its candidates (the symbol retriever then finds sections the word search did not return).
NAMED_RFCS = ("0940-hyphens-considered-harmful.md", "1214-projections-lifetimes-and-wf.md",
              "2947-crates-io-token-scopes.md", "3691-trusted-publishing-cratesio.md")
OTHER_RFCS = 70
SENTENCE = "restrict what a crates.io API token is allowed to publish from CI"

QUERIES = [
    "storage", "why SQLite instead of JSON files", "rank fusion", "tag:storage", "type:adr", "status:superseded",
    "type:adr storage", "tag:storage index", "query language facets", "error codes", "-32602", "FTS5",
    "reciprocal rank fusion k=60", "how are documents indexed", SENTENCE, "crates.io", "token scopes",
    "publish crates from CI", "cargo publish --token", "hyphens in crate names", "trusted publishing",
]
STAGES = [["lexical"], ["semantic"], ["lexical", "semantic"], ["lexical", "semantic", "rerank"],
          ["lexical", "rerank"]]


def rfcs_to_copy() -> list[Path]:
    mentioning = sorted(p for p in RFCS.glob("*.md") if p.name not in NAMED_RFCS and "crates.io" in p.read_text())
    return [RFCS / name for name in NAMED_RFCS] + mentioning[:OTHER_RFCS]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """doc/kb and RFCs in one workspace, embedded and re-ranked by the toy TEI server."""
    root = tmp_path_factory.mktemp("corpus")
    shutil.copytree(ROOT / "doc" / "kb", root / "kb")
    (root / "kb" / "rfcs").mkdir()
    for path in rfcs_to_copy():
        shutil.copy(path, root / "kb" / "rfcs" / path.name)
    engine = Engine(root / "autodoc.db")
    with model_server("tei") as server:
        engine.workspace_add("kb", str(root / "kb"))
        engine.workspace_configure("kb", {
            "embedder": {"provider": "tei", "url": server.url, "timeout": 120}, "semantic_deadline": 60,
            "ranker": {"provider": "tei", "url": server.url, "timeout": 120}, "rerank_deadline": 60})
        assert engine.workspace_index("kb", {"wait": "semantic"})["semantic"] == "ready"
        yield engine
    engine.close()


def assert_in_relevance_order(hits: list[dict], what: str) -> None:
    numbers = [hit["relevance"] for hit in hits]
    assert all(a >= b for a, b in zip(numbers, numbers[1:], strict=False)), f"{what}: {numbers}"


def test_every_list_comes_in_relevance_order(corpus: Engine) -> None:
    checked = 0
    for query in QUERIES:
        for stages in STAGES:
            partials: list[dict] = []
            opts = {"stages": stages, "limit": 15, "snippets": False}
            final = corpus.search("kb", query, opts, SearchStream(on_partial=partials.append)).to_wire()
            for answer in [*partials, final]:
                assert_in_relevance_order(answer["hits"], f"{query!r} {stages} partial={answer.get('partial')}")
                checked += len(answer["hits"]) > 1
    for path in ["adr/0001-index-as-json-files.md", "adr/0003-rank-fusion.md", "rfcs/" + NAMED_RFCS[2]]:
        for stages in STAGES:
            related = corpus.search_related("kb", path, {"stages": stages, "limit": 15}).to_wire()
            assert_in_relevance_order(related["hits"], f"related {path} {stages}")
            checked += len(related["hits"]) > 1
    assert checked > 100  # lists of two or more hits were checked, not empty answers


@pytest.mark.parametrize("query", ["tag:storage", "type:adr", "tag:storage type:adr"])
@pytest.mark.parametrize("stages", STAGES)
def test_a_superseded_adr_lists_below_its_successor_in_every_mode(corpus: Engine, query: str,
                                                                  stages: list[str]) -> None:
    hits = corpus.search_query("kb", query, {"stages": stages}).to_wire()["hits"]
    listed = [hit["path"] for hit in hits]
    old, new = "adr/0001-index-as-json-files.md", "adr/0002-index-in-sqlite.md"
    assert listed.index(new) < listed.index(old), listed
    assert hits[listed.index(old)]["superseded_by"] == new


def test_a_sentence_s_identifier_does_not_put_symbol_only_hits_above_the_sentence_s_matches(corpus: Engine) -> None:
    """The issue's example, lexical: sections found by the symbol retriever alone (they hold crates.io and
    none of the sentence's words the word search ranked) list below every section the word search found."""
    answer = corpus.search_query("kb", SENTENCE, {"stages": ["lexical"], "limit": 20}).to_wire()
    assert answer["query_shape"]["shape"] == "identifier" and not answer["query_shape"]["pasted"]
    via = [hit["via"] for hit in answer["hits"]]
    symbol_only = [i for i, found in enumerate(via) if found == ["symbol"]]
    worded = [i for i, found in enumerate(via) if "lexical" in found]
    assert worded and (not symbol_only or min(symbol_only) > max(worded)), via
    documents = list(dict.fromkeys(hit["path"] for hit in answer["hits"]))
    assert "rfcs/2947-crates-io-token-scopes.md" in documents[:3], documents
    assert_in_relevance_order(answer["hits"], SENTENCE)


def test_a_pasted_identifier_still_finds_its_symbol_only_sections_first(corpus: Engine) -> None:
    """The backstop stays for an identifier pasted alone: there the symbol retriever is a retriever of its own."""
    answer = corpus.search_query("kb", "crates.io", {"stages": ["lexical"], "limit": 20}).to_wire()
    assert answer["query_shape"]["pasted"]
    assert any("symbol" in hit["via"] for hit in answer["hits"][:3])
