"""search.related: each way a section is related (semantic, link, lexical), the fallback without vectors,
filters, demotion, bad input, and the RPC surface."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autodoc_core.errors import INVALID_PARAMS, NOT_FOUND, OUTSIDE_ROOT, AutodocError
from autodoc_core.service.engine import Engine
from tests.conftest import PROJECT, StdioServer, paths, write
from tests.related_corpus import lexical_workspace, notes, related


def test_the_nearest_section_by_its_stored_vector_is_related_semantically(engine: Engine, kb: Path) -> None:
    notes(kb)
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb", {"wait": "semantic"})
    answer = related(engine, "storage.md", line=7, stages=["semantic"])
    assert answer["related"]["section"]["breadcrumb"] == "Storage › Decision"
    assert answer["related"]["vector"] == "section"
    assert paths(answer)[0] == "database.md"  # no word in common with the section: its meaning only
    assert answer["hits"][0]["via"] == ["semantic"]
    assert "storage.md" not in paths(answer)
    assert answer["stages"]["performed"] == ["semantic", "link"] and answer["mode_used"] == "semantic"
    assert set(answer["timing"]) >= {"locate", "semantic", "words", "link", "fuse", "shape", "total"}
    whole = related(engine, "storage.md")
    assert whole["related"]["section"] is None and whole["related"]["vector"].startswith("document")
    assert "storage.md" not in paths(whole) and whole["stages"]["performed"] == ["semantic", "lexical", "link"]


def test_links_either_way_relate_documents(engine: Engine, kb: Path) -> None:
    write(kb, "a.md", "# Alpha\n\nSee [the beta note](b.md) for more.\n")
    write(kb, "b.md", "# Beta\n\nNothing in common with the others.\n")
    write(kb, "c.md", "# Gamma\n\nBuilds on [[Alpha]].\n")
    write(kb, "d.md", "# Delta\n\nUnrelated words entirely.\n")
    lexical_workspace(engine, kb)
    answer = related(engine, "a.md")
    assert sorted(paths(answer)) == ["b.md", "c.md"]  # b: a links to it; c: it links to a
    assert all("link" in hit["via"] for hit in answer["hits"])
    assert answer["related"]["linked_documents"] == 2
    back = related(engine, "b.md")
    assert paths(back) == ["a.md"] and "link" in back["hits"][0]["via"]


def test_the_most_distinctive_words_are_searched_more_like_this(engine: Engine, kb: Path) -> None:
    notes(kb)
    lexical_workspace(engine, kb)
    answer = related(engine, "storage.md", line=13)  # Backups: "... while the gecko service runs"
    assert answer["related"]["section"]["breadcrumb"] == "Storage › Backups"
    assert paths(answer)[0] == "gecko.md" and answer["hits"][0]["via"] == ["lexical"]
    assert "gecko" in answer["query"]["terms"]
    assert answer["stages"]["skipped"]["semantic"] == "no embedding model is configured for this workspace"
    assert answer["mode_used"] == "lexical"


def test_without_vectors_yet_links_and_words_answer_and_say_why(engine: Engine, kb: Path) -> None:
    notes(kb)
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb", {"wait": "semantic"})
    write(kb, "new.md", "# New\n\nThe gecko replicas move to [storage](storage.md).\n")
    engine.workspace_index("kb")  # words only: no background filler runs in this process
    answer = related(engine, "new.md", line=3)
    assert answer["stages"]["skipped"]["semantic"].startswith("this section has no vector yet")
    assert {"gecko.md", "storage.md"} <= set(paths(answer))
    vias: dict[str, set[str]] = {}
    for hit in answer["hits"]:
        vias.setdefault(hit["path"], set()).update(hit["via"])
    assert "link" in vias["storage.md"] and "lexical" in vias["gecko.md"]


def test_facets_and_paths_filter_the_related_sections(engine: Engine, kb: Path) -> None:
    notes(kb)
    write(kb, "ops/gecko-runbook.md", "---\ntags: [oncall]\n---\n# Runbook\n\n"
                                      "Restart the gecko service when gecko replicas lag.\n")
    lexical_workspace(engine, kb)
    everything = related(engine, "storage.md", line=13)
    assert {"gecko.md", "ops/gecko-runbook.md"} <= set(paths(everything))
    accepted = related(engine, "storage.md", line=13, facets={"status": "accepted"})
    assert "gecko.md" not in paths(accepted) and "ops/gecko-runbook.md" not in paths(accepted)
    assert paths(related(engine, "storage.md", line=13, paths=["ops"])) == ["ops/gecko-runbook.md"]
    assert paths(related(engine, "storage.md", line=13, tags=["oncall"])) == ["ops/gecko-runbook.md"]
    typo = related(engine, "storage.md", facets={"status": "acepted"})
    assert typo["hits"] == [] and "matches no document" in typo["query"]["problems"][0]


def test_three_sections_per_document_at_most_and_superseded_below_successor(engine: Engine, kb: Path) -> None:
    sections = "".join(f"## Part {n}\n\nThe gecko quorum votes, part {n}.\n\n" for n in range(6))
    write(kb, "long.md", f"# Long\n\n{sections}")
    write(kb, "old.md", "---\nstatus: superseded\nsuperseded_by: new.md\n---\n# Old\n\nGecko quorum votes gecko.\n")
    write(kb, "new.md", "# New\n\nThe quorum votes.\n")
    write(kb, "source.md", "# Source\n\nHow does the gecko quorum vote?\n")
    lexical_workspace(engine, kb)
    answer = related(engine, "source.md", limit=20)
    assert paths(answer).count("long.md") == 3
    found = paths(answer)
    assert found.index("new.md") < found.index("old.md")


def test_bad_input_gets_a_clear_error_with_its_code(engine: Engine, kb: Path) -> None:
    notes(kb)
    lexical_workspace(engine, kb)
    cases = [("missing.md", {}, NOT_FOUND, "does not exist"), ("../outside.md", {}, OUTSIDE_ROOT, "outside"),
             ("storage.md", {"line": 500}, INVALID_PARAMS, "past the end: storage.md has 13 lines"),
             ("storage.md", {"line": "7"}, INVALID_PARAMS, "'line' must be a line number"),
             ("storage.md", {"limit": 0}, INVALID_PARAMS, "'limit'")]
    for path, opts, code, words in cases:
        with pytest.raises(AutodocError) as caught:
            engine.search_related("kb", path, opts)
        assert caught.value.code == code and words in caught.value.reason, (path, opts, caught.value.reason)
    write(kb, "later.md", "# Later\n\nWritten after the index run.\n")
    with pytest.raises(AutodocError) as caught:
        engine.search_related("kb", "later.md", {})
    assert caught.value.code == NOT_FOUND and caught.value.reason == "later.md is not indexed yet"
    assert "workspace.index" in caught.value.data["fix"]


def test_the_only_document_gets_an_empty_answer_that_says_so(engine: Engine, kb: Path) -> None:
    write(kb, "alone.md", "# Alone\n\nNothing else here.\n")
    lexical_workspace(engine, kb)
    answer = related(engine, "alone.md", line=3)
    assert answer["hits"] == []
    note = "alone.md is the only document in workspace kb: there is nothing to relate it to"
    assert answer["related"]["note"] == note
    assert answer["query"]["problems"] == [answer["related"]["note"]]
    write(kb, "bare.md", "---\ntitle: Bare\n---\n")
    engine.workspace_index("kb")
    bare = related(engine, "bare.md", line=1)
    assert bare["hits"] == [] and bare["related"]["note"].startswith("bare.md has no sections")


def test_related_over_serve_stdio_and_the_cli(tmp_path: Path, kb: Path) -> None:
    notes(kb)
    db = tmp_path / "autodoc.db"
    with Engine(db) as engine:
        lexical_workspace(engine, kb)
    server = StdioServer(db)
    try:
        answer = server.ask("search.related", ["kb", "storage.md", {"line": 13}])
        assert answer["result"]["hits"][0]["path"] == "gecko.md"
        error = server.ask("search.related", ["kb", "storage.md", {"line": 99}])["error"]
        assert error["code"] == INVALID_PARAMS and "past the end" in error["data"]["reason"]
    finally:
        server.close()
    cli = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(db), "--call", "search.related",
                          '["kb", "storage.md", {"line": 13, "limit": 1}]'], capture_output=True, text=True,
                         cwd=PROJECT, check=True)
    assert '"path": "gecko.md"' in cli.stdout


def test_the_ranker_reorders_related_sections_by_the_source_s_text(engine: Engine, kb: Path) -> None:
    from tests.model_servers import model_server

    notes(kb)
    write(kb, "ovens.md", "# Ovens\n\nA gecko bakes bread in a stone oven.\n")
    lexical_workspace(engine, kb)
    with model_server("tei") as server:
        engine.workspace_configure("kb", {"ranker": {"provider": "tei", "url": server.url, "window": 10}})
        answer = related(engine, "cooking.md", line=7)
        assert answer["rank"]["state"] == "ranked" and "rerank" in answer["stages"]["performed"]
        assert all("rank" in hit["via"] for hit in answer["hits"])
        request = next(r for r in server.behaviour.requests if r["path"] == "/rerank")
        assert "Flour, water, salt and yeast make bread" in request["body"]["query"]  # the section is the query
        unranked = related(engine, "cooking.md", line=7, stages=["lexical"])
        assert unranked["rank"]["state"] == "not_requested" and "rerank" not in unranked["stages"]["performed"]
