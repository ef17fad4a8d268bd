"""The semantic stage in the engine: filling, dedupe, states, errors, fusion, snapshots."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from autodoc_core.errors import UNKNOWN_WORKSPACE, AutodocError
from autodoc_core.index import checkpoints, vectors
from autodoc_core.rank.fuse import auto_weight
from autodoc_core.retrieve.semantic import VectorIndex
from autodoc_core.service.engine import Engine
from autodoc_core.store import embeddings
from tests.conftest import database_bytes, paths, search, write
from tests.model_servers import Behaviour, model_server, toy_vector
from tests.semantic_corpus import embed_with_tei, notes, tei_config

SECRET = "sk-never-stored-4242"


def embedded_rows(engine) -> int:
    with engine.store.snapshot() as conn:
        return conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]


def test_local_model_gives_hybrid_search(engine, kb: Path) -> None:
    notes(kb)
    engine.workspace_add("kb", str(kb))
    report = engine.workspace_index("kb", {"wait": "semantic"})
    assert report["semantic"] == "ready" and report["embedding"]["embedded"] == 3
    answer = search(engine, "why did we choose an embedded relational store")
    assert answer["stages"]["performed"] == ["lexical", "semantic"]
    assert answer["mode_used"] == "hybrid" and answer["semantic"] == "ready"
    assert paths(answer)[0] == "storage.md"
    only = search(engine, "baking a loaf", stages=["semantic"])
    assert paths(only)[0] == "cooking.md" and only["hits"][0]["via"] == ["semantic"]
    timing = answer["timing"]
    assert set(timing) >= {"embed", "embed_wait", "semantic", "lexical", "fuse", "total"}
    # Main-thread laps fit in the total (to their 0.001 ms rounding); the embedding ran in its own
    # thread, so it is not one of them. How much it overlaps the lexical stage is `make bench`'s to say.
    laps = [value for name, value in timing.items() if name not in ("total", "embed")]
    assert sum(laps) <= timing["total"] + 0.001 * len(laps)
    assert timing["embed"] > 0 and timing["embed_wait"] >= 0
    status = engine.workspace_status("kb")
    assert status["embedder"]["model_fp"] == "local:all-MiniLM-L6-v2:384:l2"
    assert status["embedder"]["embedded"] == status["embedder"]["total"] == 3


def index_in_batches_of_4(engine, kb: Path, url: str) -> dict:
    """Add and index the kb folder (lexically) with the toy TEI server as its embedder, 4 texts a batch, so a
    test can hold the fill at a batch; the workspace's configuration."""
    engine.workspace_add("kb", str(kb))
    config = tei_config(url)
    config["embedder"].update(batch_size=4, timeout=120)
    engine.workspace_configure("kb", config)
    engine.workspace_index("kb")
    return config


def fill_in_a_thread(engine) -> tuple[threading.Thread, list[BaseException]]:
    """workspace.index "kb" with wait "semantic", started in a thread; the list gets what it raised."""
    raised: list[BaseException] = []

    def fill() -> None:
        try:
            engine.workspace_index("kb", {"wait": "semantic"})
        except BaseException as exc:  # the test looks at it
            raised.append(exc)

    thread = threading.Thread(target=fill)
    thread.start()
    return thread, raised


def test_identical_sections_share_one_vector_and_edits_reembed_only_changes(engine, kb: Path) -> None:
    shared = "## Shared\n\nThe same boilerplate paragraph in every file.\n"
    for name in ("a", "b", "c"):  # same headings, so the shared section's breadcrumb and text are identical
        write(kb, f"{name}.md", f"# Guide\n\n{shared}\n## Own\n\nunique words for {name}\n")
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        assert embedded_rows(engine) == 4  # one shared text + three own
        sent = sum(len(r["body"]["inputs"]) for r in server.behaviour.requests if r["path"] == "/embed")
        write(kb, "a.md", f"# Guide\n\n{shared}\n## Own\n\nunique words for a, edited\n")
        report = engine.workspace_index("kb", {"wait": "semantic"})
        after = sum(len(r["body"]["inputs"]) for r in server.behaviour.requests if r["path"] == "/embed")
        assert report["embedding"]["embedded"] == 4
        assert after - sent == 1  # only the edited section went to the model
        assert embedded_rows(engine) == 4  # the old text's vector is gone


def chunk_id(engine, breadcrumb: str) -> int:
    with engine.store.snapshot() as conn:
        return conn.execute("SELECT id FROM chunks WHERE breadcrumb = ?", (breadcrumb,)).fetchone()[0]


def test_a_reused_chunk_id_gets_its_own_vector(engine, kb: Path) -> None:
    """SQLite gives a new chunk the id of the highest one deleted. Delete a note's last section, save, add
    another, save, with no search in between: the new section had the deleted one's id and document,
    and the in-memory index kept the deleted section's vector for it."""
    write(kb, "other.md", "# Other\n\n## Weather\n\nrain and clouds over the hills\n")
    write(kb, "zz-garden.md", "# Garden\n\n## Roses\n\nprune the roses in spring\n\n## Ovens\n\nbake sourdough bread\n")
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        assert paths(search(engine, "bake sourdough bread", stages=["semantic"]))[0] == "zz-garden.md"  # held now
        ovens = chunk_id(engine, "Garden › Ovens")
        write(kb, "zz-garden.md", "# Garden\n\n## Roses\n\nprune the roses in spring\n")
        engine.workspace_index("kb", {"wait": "semantic"})
        write(kb, "zz-garden.md", "# Garden\n\n## Roses\n\nprune the roses in spring\n\n## Rain\n\n"
                                  "rain and clouds over the hills\n")
        engine.workspace_index("kb", {"wait": "semantic"})
        assert chunk_id(engine, "Garden › Rain") == ovens  # the case: SQLite reused the id
        hits = search(engine, "bake sourdough bread", stages=["semantic"])["hits"]
        assert not any("Rain" in hit["breadcrumb"] and hit["relevance"] > 0.9 for hit in hits)
        rain = search(engine, "rain and clouds over the hills", stages=["semantic"])["hits"]
        assert {"Garden › Rain", "Other › Weather"} <= {hit["breadcrumb"] for hit in rain[:2]}


def test_a_query_with_no_words_is_not_embedded(engine, kb: Path) -> None:
    """'???' or '-' has no word to search for: the lexical stage finds nothing, and its vector ranked
    every section at random, so a hybrid search answered with arbitrary hits."""
    notes(kb)
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        for text in ("???", "-", " "):
            answer = search(engine, text)
            assert answer["hits"] == []
            assert answer["stages"]["skipped"]["semantic"] == "the query has no words to search for"
        facets_only = search(engine, "tag:none")
        assert facets_only["stages"]["performed"] == ["facet"]
        assert set(facets_only["stages"]["skipped"]) >= {"lexical", "semantic"}


def test_partial_while_vectors_are_missing(engine, kb: Path) -> None:
    notes(kb)
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        write(kb, "new.md", "# New\n\n## Fresh\n\nA brand new sockets note.\n")
        engine.workspace_index("kb")  # lexical only: the new file has no vector yet
        answer = search(engine, "sockets note")
        assert answer["semantic"] == "partial"
        new_hits = [h for h in answer["hits"] if h["path"] == "new.md"]
        assert new_hits and new_hits[0]["via"] == ["lexical"]  # answered lexically until embedded
        status = engine.workspace_status("kb")
        assert status["embedder"]["embedded"] < status["embedder"]["total"]
        engine.workspace_index("kb", {"wait": "semantic"})
        again = search(engine, "sockets note")
        assert again["semantic"] == "ready"
        assert "semantic" in next(h for h in again["hits"] if h["path"] == "new.md")["via"]


def test_switching_models_fills_in_the_background(engine, kb: Path) -> None:
    notes(kb)
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb", {"wait": "semantic"})  # the local model is active
    with model_server("tei") as server:
        engine.workspace_configure("kb", tei_config(server.url))
        (ws := engine._workspace("kb")) and engine._semantic.of(ws).embedder(ws).probe()
        answer = search(engine, "sockets")
        assert answer["semantic"] == "switching"
        assert answer["stages"]["skipped"]["semantic"] == "a new embedding model is filling"
        with pytest.raises(AutodocError) as caught:
            search(engine, "sockets", stages=["semantic"])
        assert caught.value.code == -32069
        engine.workspace_index("kb", {"wait": "semantic"})
        done = search(engine, "sockets", stages=["semantic"])
        assert done["semantic"] == "ready" and paths(done)[0] == "network.md"
        assert engine.workspace_status("kb")["embedder"]["active_model_fp"].startswith("tei:")
        with engine.store.snapshot() as conn:
            models = {r[0] for r in conn.execute("SELECT DISTINCT model_fp FROM embeddings")}
        assert models == {engine.workspace_status("kb")["embedder"]["active_model_fp"]}


def test_provider_failures_and_error_codes(engine, kb: Path) -> None:
    notes(kb)
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    with pytest.raises(AutodocError) as caught:
        search(engine, "x", stages=["semantic"])
    assert caught.value.code == -32065
    with model_server("tei") as server:
        engine.workspace_configure("kb", tei_config(server.url))
        engine.workspace_index("kb", {"wait": "semantic"})
    # the server is gone now
    with pytest.raises(AutodocError) as caught:
        search(engine, "sockets", stages=["semantic"])
    assert caught.value.code == -32067 and "cannot reach" in caught.value.reason
    answer = search(engine, "sockets")
    assert answer["stages"]["performed"] == ["lexical"]
    assert answer["stages"]["skipped"]["semantic"].startswith("embedding the query failed: cannot reach")
    assert paths(answer) == ["network.md"]


def test_server_dying_mid_fill_keeps_progress_and_resumes(engine, kb: Path) -> None:
    for i in range(40):
        write(kb, f"n{i:02d}.md", f"# Note {i}\n\nbody text number {i} about topic {i % 7}\n")
    engine.workspace_add("kb", str(kb))
    with model_server("tei", Behaviour(drop_after=3)) as server:  # dimension probe, model check, a batch, dies
        config = tei_config(server.url)
        config["embedder"]["batch_size"] = 16
        engine.workspace_configure("kb", config)
        with pytest.raises(AutodocError) as caught:
            engine.workspace_index("kb", {"wait": "semantic"})
        assert caught.value.code == -32067
        kept = embedded_rows(engine)
        assert kept == 16
        server.behaviour.drop_after = None
        report = engine.workspace_index("kb", {"wait": "semantic"})
        assert report["embedding"]["embedded"] == 40 and report["semantic"] == "ready"
    status = engine.workspace_status("kb")
    assert status["embedder"]["calls"]["failures"] >= 1


def test_a_section_the_server_refuses_does_not_stop_the_fill(engine, kb: Path) -> None:
    """A server refuses a text as sent (TEI: 413 over its payload limit; OpenAI: 400 past the context).
    The failing batch came first again after every back-off, so nothing after it was ever embedded.
    Now the batch is halved down to the refused section, which gets its heading's vector, and the
    workspace becomes ready; status says how many and why."""
    for i in range(20):
        write(kb, f"n{i:02d}.md", f"# Note {i}\n\nbody text number {i}\n")
    image = "![plot](data:image/png;base64," + "iVBORw0KGgo" * 500 + ")"  # one line: no part of it is cut off
    write(kb, "logs.md", f"# Logs\n\n## Full dump\n\n{image}\n")
    engine.workspace_add("kb", str(kb))
    with model_server("tei", Behaviour(max_text_chars=3000)) as server:
        engine.workspace_configure("kb", tei_config(server.url))
        report = engine.workspace_index("kb", {"wait": "semantic"})
        assert report["semantic"] == "ready"
        status = engine.workspace_status("kb")
        assert status["semantic"] == "ready" and status["embedder"]["embedded"] == status["embedder"]["total"]
        progress = status["embedder"]["progress"]
        assert progress["heading_only"] == 1 and "413" in progress["refused"]
        sent = [t for r in server.behaviour.requests if r["path"] == "/embed" for t in r["body"]["inputs"]]
        assert max(len(t) for t in sent) <= 6000  # cut before sending, whatever the server's limit
        assert "Logs › Full dump" in sent


def test_api_key_never_reaches_the_database(engine, kb: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", SECRET)
    notes(kb)
    with model_server("openai") as server:
        engine.workspace_add("kb", str(kb))
        engine.workspace_configure("kb", {"embedder": {"provider": "openai", "url": server.url, "model": "toy",
                                                        "api_key_env": "MY_EMBED_KEY"}})
        engine.workspace_index("kb", {"wait": "semantic"})
        assert server.behaviour.requests[0]["auth"] == f"Bearer {SECRET}"
        assert search(engine, "sockets")["semantic"] == "ready"
    engine.store.close()
    assert SECRET.encode() not in database_bytes(tmp_path)


def test_filters_apply_before_the_scan(engine, kb: Path) -> None:
    notes(kb)
    write(kb, "sub/sockets2.md", "# More sockets\n\nsockets sockets\n")
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        answer = search(engine, "sockets", stages=["semantic"], paths=["sub"])
        assert paths(answer) == ["sub/sockets2.md"]


def test_linear_fusion_relevance_is_the_blend(engine, kb: Path) -> None:
    """Worked by hand: network.md is the only lexical match (lexical share 1.0) and the nearest vector
    (cosine share 1.0), so its blend at w = 0.5 is 1.0; its document has this one section, so the
    document's blend is 1.0 too and the score (no tags, no links) is 1.0 + 1.0 x 1.0 = 2.0. The others
    have no query word and the lowest cosines: blend 0."""
    notes(kb)
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url, fusion="linear", fusion_weight=0.5)
        answer = search(engine, "packets sockets hosts")
    top = answer["hits"][0]
    assert (top["path"], top["relevance"], top["score"]) == ("network.md", 1.0, 2.0)
    assert top["via"] == ["lexical", "semantic"]
    assert all(hit["relevance"] < 0.5 for hit in answer["hits"][1:])


def long_document(sections: int, topic: str) -> str:
    return f"# {topic}\n\n" + "".join(f"## Part {i}\n\nThe {topic} notes, part {i}, on packets.\n\n"
                                      for i in range(sections))


def test_auto_fusion_weight_follows_the_document_shape(engine, kb: Path) -> None:
    """ "auto" (the default) lowers the lexical weight as documents get more sections, recounts when the
    workspace changes, and says what it used; a number fixes it; anything else is refused."""
    for name in ("a", "b", "c"):
        write(kb, f"{name}.md", long_document(30, f"topic {name}"))
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        used = search(engine, "packets notes")["query"]["fusion_weight"]
        assert used["auto"] is True and used["sections_per_document"] >= 20
        assert used["value"] == round(auto_weight(used["sections_per_document"]), 3) < 0.3
        for i in range(4):  # now most documents have one section: the median falls to 1, the weight to 0.4
            write(kb, f"short{i}.md", f"# Short {i}\n\nA short note on packets.\n")
        engine.workspace_index("kb", {"wait": "semantic"})
        assert search(engine, "packets notes")["query"]["fusion_weight"] == \
            {"value": 0.4, "auto": True, "sections_per_document": 1}
        identifier = search(engine, "packets_notes")["query"]["fusion_weight"]  # snake_case: identifier-shaped
        assert identifier == {"value": 0.6, "auto": True, "sections_per_document": 1, "identifier_query": True}
        engine.workspace_configure("kb", {"fusion_weight": 0.5})
        assert search(engine, "packets notes")["query"]["fusion_weight"] == {"value": 0.5, "auto": False}
    with pytest.raises(AutodocError, match='fusion_weight.*a number \\(or "auto"\\)'):
        engine.workspace_configure("kb", {"fusion_weight": "heavy"})


def test_a_reader_with_the_configuration_before_a_change_does_not_reset_the_new_model(engine, kb: Path) -> None:
    """The background filler can hold the workspace as it was read before ``workspace.configure`` (seen under
    load: ``index --wait semantic`` then answered "switching" for a model it had just filled). Asking for that
    old configuration's embedder must not throw away the new one, which alone knows its dimensions."""
    notes(kb)
    with model_server("tei") as server:
        engine.workspace_add("kb", str(kb))
        before = engine._workspace("kb")  # the local model, as a thread that read it earlier still holds it
        engine.workspace_configure("kb", tei_config(server.url))
        assert engine.workspace_index("kb", {"wait": "semantic"})["semantic"] == "ready"
        engine._semantic.of(before).embedder(before)
        assert engine.workspace_status("kb")["semantic"] == "ready"
        assert engine.workspace_index("kb", {"wait": "semantic"})["semantic"] == "ready"


def test_searches_stay_consistent_while_embedding_runs(engine, kb: Path) -> None:
    """Searches while the fill is held half-way (the server holds its 6th batch): each answer is
    'partial', finds every note once with one generation each, and gives semantic hits only for
    chunks that have their vector; then the fill completes and the answer is 'ready'."""
    for i in range(60):
        write(kb, f"n{i:02d}.md", f"# Note {i}\n\n## Part\n\nshared kiwi text {i}\n")
    with model_server("tei", Behaviour(hold_after=5)) as server:
        index_in_batches_of_4(engine, kb, server.url)
        filler, errors = fill_in_a_thread(engine)
        server.behaviour.holding.wait(timeout=60)
        assert embedded_rows(engine) == 20  # 5 batches of 4 are stored; the 6th is held
        for _ in range(5):
            answer = search(engine, "kiwi", limit=60)
            assert answer["semantic"] == "partial"
            notes = [hit["path"] for hit in answer["hits"] if hit["path"].startswith("n")]
            assert sorted(set(notes)) == [f"n{i:02d}.md" for i in range(60)]
            assert all(len({h["generation"] for h in answer["hits"] if h["path"] == p}) == 1 for p in notes)
            assert sum("semantic" in hit["via"] for hit in answer["hits"]) <= 20
        server.behaviour.release.set()
        filler.join(timeout=120)
    assert not errors
    assert search(engine, "kiwi", limit=60)["semantic"] == "ready"


def test_documents_become_searchable_one_by_one_while_the_vectors_fill(engine, kb: Path) -> None:
    """A document takes part in semantic search once all of its sections have vectors. The fill took texts
    in hash order, so every document lacked one until the last minutes of a long fill; it goes document by
    document now: with 3 batches of 4 stored, 3 four-section notes answer."""
    for i in range(10):
        parts = "".join(f"## Part {j}\n\nkiwi fact {i} {j}\n\n" for j in range(4))
        write(kb, f"n{i:02d}.md", f"# Note {i}\n\n{parts}")
    with model_server("tei", Behaviour(hold_after=3)) as server:
        index_in_batches_of_4(engine, kb, server.url)
        filler = threading.Thread(target=lambda: engine.workspace_index("kb", {"wait": "semantic"}))
        filler.start()
        try:
            assert server.behaviour.holding.wait(timeout=60)
            assert embedded_rows(engine) == 12
            answer = search(engine, "kiwi fact", limit=50, stages=["semantic"])
            assert answer["semantic"] == "partial"
            assert len(set(paths(answer))) == 3
        finally:
            server.behaviour.release.set()
            filler.join(timeout=120)
    assert len(set(paths(search(engine, "kiwi fact", limit=50, stages=["semantic"])))) == 10


def test_the_document_order_fill_reads_along_the_document_index(engine, kb: Path) -> None:
    """Left to itself SQLite answered the fill's 'next texts without a vector' by sorting every missing chunk
    of the workspace for each batch (1.2 s a batch at 200,000 chunks)."""
    notes(kb)
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb")
    with engine.store.snapshot() as conn:
        plan = " ".join(str(row) for row in conn.execute("EXPLAIN QUERY PLAN " + embeddings.MISSING_TEXTS_SQL,
                                                         (1, 0, "fp", 8)))
    assert "USING INDEX chunks_doc" in plan and "TEMP B-TREE" not in plan


def test_a_fill_stops_at_its_next_batch_when_the_model_is_replaced(engine, kb: Path) -> None:
    """The user switches models while the old one fills: the old fill went on to its end (hours on a large
    workspace) before the new one began, and with two processes both models filled side by side. It stops
    after the batch in flight."""
    for i in range(40):
        write(kb, f"n{i:02d}.md", f"# Note {i}\n\nkiwi fact {i}\n")
    with model_server("tei", Behaviour(hold_after=2)) as old, model_server("tei", Behaviour(model="new")) as new:
        config = index_in_batches_of_4(engine, kb, old.url)
        reports: list[dict] = []
        filler = threading.Thread(target=lambda: reports.append(engine.workspace_index("kb", {"wait": "semantic"})))
        filler.start()
        try:
            assert old.behaviour.holding.wait(timeout=60)
            engine.workspace_configure("kb", {"embedder": {**config["embedder"], "url": new.url, "model": "new"}})
        finally:
            old.behaviour.release.set()
            filler.join(timeout=120)
        assert old.behaviour.batches == 3  # two answered, the one in flight; none after
        assert reports[0]["embedding"]["embedded"] == 12 < reports[0]["embedding"]["total"] == 40
        assert engine.workspace_index("kb", {"wait": "semantic"})["embedding"]["embedded"] == 40
        assert old.behaviour.batches == 3


def test_a_workspace_removed_while_a_batch_is_embedded_leaves_no_vectors(engine, kb: Path) -> None:
    """The user removes the workspace while the provider embeds a batch: the answer came back after the
    removal and was stored under a workspace that no longer exists, rows nothing would ever delete."""
    for i in range(12):
        write(kb, f"n{i:02d}.md", f"# Note {i}\n\nkiwi fact {i}\n")
    with model_server("tei", Behaviour(hold_after=1)) as server:
        index_in_batches_of_4(engine, kb, server.url)
        filler, failures = fill_in_a_thread(engine)
        try:
            assert server.behaviour.holding.wait(timeout=60)
            engine.workspace_remove("kb")
        finally:
            server.behaviour.release.set()
            filler.join(timeout=120)
    assert embedded_rows(engine) == 0
    assert [exc.code for exc in failures] == [UNKNOWN_WORKSPACE]


def test_a_workspace_added_again_is_not_served_its_predecessors_vectors(engine, kb: Path, tmp_path: Path) -> None:
    """Removed and added again, a workspace gets the same id (SQLite reuses the highest) and, after the same
    steps, the same vector epoch: another process that had searched the first one took its vectors in memory
    for the second's."""
    write(kb, "a.md", "# Alpha\n\nkiwi orchard\n")
    write(kb, "b.md", "# Beta\n\nsubmarine harbour\n")
    other = Engine(tmp_path / "autodoc.db")
    try:
        with model_server("tei") as server:
            embed_with_tei(engine, kb, server.url)
            assert paths(search(other, "kiwi orchard", stages=["semantic"]))[0] == "a.md"
            engine.workspace_remove("kb")
            write(kb, "a.md", "# Alpha\n\nsubmarine harbour\n")
            write(kb, "b.md", "# Beta\n\nkiwi orchard\n")
            embed_with_tei(engine, kb, server.url)
            assert paths(search(other, "kiwi orchard", stages=["semantic"]))[0] == "b.md"
    finally:
        other.close()


def test_two_processes_filling_at_once_never_embed_a_text_twice(engine, kb: Path, tmp_path: Path) -> None:
    """Two editors open on one database both fill: the lease was held only while storing, so each chose the
    same missing texts and a paid provider was asked for each twice. Now the texts are chosen under the lease,
    which passes between batches."""
    for i in range(48):
        write(kb, f"n{i:02d}.md", f"# Note {i}\n\nkiwi fact {i}\n")
    with model_server("tei", Behaviour(delay=0.05)) as server:
        engine.workspace_add("kb", str(kb))
        config = tei_config(server.url)
        config["embedder"].update(batch_size=4)
        engine.workspace_configure("kb", config)
        engine.workspace_index("kb")
        other = Engine(tmp_path / "autodoc.db")
        try:
            fills = [threading.Thread(target=one.workspace_index, args=("kb", {"wait": "semantic"}))
                     for one in (engine, other)]
            for fill in fills:
                fill.start()
            for fill in fills:
                fill.join(timeout=120)
        finally:
            other.close()
        sent = [text for request in server.behaviour.requests if request["path"] == "/embed"
                for text in request["body"]["inputs"] if text not in ("dimension probe", vectors.MODEL_CHECK_TEXT)]
    assert len(sent) == len(set(sent)) == 48 and embedded_rows(engine) == 48


def test_a_fresh_process_reports_a_remote_model_it_has_not_used_yet(engine, kb: Path, tmp_path: Path) -> None:
    """Status from a process that had not asked the remote model anything (the CLI, a second editor, the
    MCP server before its first search) said "switching", 0 of 0 embedded, model "tei::?:l2"."""
    notes(kb)
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        fresh = Engine(tmp_path / "autodoc.db")
        try:
            status = fresh.workspace_status("kb")
        finally:
            fresh.close()
    assert status["semantic"] == "ready" and "unreachable" not in status["embedder"]
    assert status["embedder"]["model_fp"] == "tei:toy/bag-of-words:32:l2"
    assert status["embedder"]["embedded"] == status["embedder"]["total"] == 3


def test_repeated_queries_reuse_their_vector(engine, kb: Path) -> None:
    notes(kb)
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        before = len(server.behaviour.requests)
        for stages in (["lexical", "semantic"], ["semantic"], ["lexical", "semantic"]):
            search(engine, "sockets and packets", stages=stages)
        assert len(server.behaviour.requests) == before + 1  # one query embedding for three searches



def test_facets_filter_the_semantic_stage_too(engine, kb: Path) -> None:
    """A facet restricts what the semantic stage may return, alone and in hybrid: the notes say the
    same words, only the ADR's frontmatter differs. Broken on purpose: recall without
    allowed_documents() fails it."""
    write(kb, "_schema/frontmatter.yaml", "common: {status: string}\ntypes:\n  adr: {number: integer}\n")
    write(kb, "adr/0007.md", "---\ntype: adr\nnumber: 7\nstatus: accepted\n---\n# ADR 7\n\nSockets between hosts.\n")
    write(kb, "notes/a.md", "# Note A\n\nSockets between hosts.\n")
    write(kb, "notes/b.md", "---\nstatus: accepted\n---\n# Note B\n\nSockets between hosts.\n")
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        for stages in (["semantic"], ["lexical", "semantic"]):
            assert paths(search(engine, "sockets hosts type:adr", stages=stages)) == ["adr/0007.md"]
            answer = search(engine, "sockets hosts", stages=stages, facets={"status": "accepted"})
            assert sorted(paths(answer)) == ["adr/0007.md", "notes/b.md"]
            assert "semantic" in answer["stages"]["performed"]
            others = search(engine, "sockets hosts -type:adr", stages=stages)
            assert sorted(paths(others)) == ["notes/a.md", "notes/b.md"]


def test_at_most_three_sections_per_document_after_fusion(engine, kb: Path) -> None:
    """Five sections of one document match both retrievers; the fused list keeps three of them and
    still shows the other document. Broken on purpose: MAX_PER_DOCUMENT = 99 fails it."""
    sections = "\n".join(f"## Part {i}\n\nkiwi orchard notes, part {i}.\n" for i in range(5))
    write(kb, "orchard.md", f"# Orchard\n\n{sections}")
    write(kb, "other.md", "# Other\n\n## Fruit\n\nA kiwi orchard elsewhere.\n")
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        answer = search(engine, "kiwi orchard", limit=20)
    assert answer["mode_used"] == "hybrid"
    assert [hit["path"] for hit in answer["hits"]].count("orchard.md") == 3
    assert "other.md" in paths(answer)
    assert len({hit["line_start"] for hit in answer["hits"] if hit["path"] == "orchard.md"}) == 3


def test_long_documents_do_not_leave_a_semantic_answer_short_of_its_limit(engine, kb: Path) -> None:
    """Every section has a cosine, yet five long notes took all 50 semantic candidates and the cap left 15 hits
    of the 30 asked for. Broken on purpose: FILL_ROUNDS = 0 fails it."""
    for n in range(5):
        sections = "\n".join(f"## Part {i}\n\nkiwi orchard kiwi orchard {i}.\n" for i in range(20))
        write(kb, f"long{n}.md", f"# Long {n}\n\n{sections}")
    for n in range(20):
        write(kb, f"short{n:02}.md", f"# Short {n}\n\nA note that names a kiwi among many other unrelated words.\n")
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        for stages in (["semantic"], ["lexical", "semantic"]):
            answer = search(engine, "kiwi orchard", limit=30, stages=stages)
            found = paths(answer)
            assert len(found) == 30 and max(found.count(path) for path in found) == 3, stages
            assert "filled" in answer["query"] and found.count("short00.md") == 1, stages
            assert paths(search(engine, "kiwi orchard", limit=12, stages=stages)) == found[:12], stages


def stored_vector(engine, breadcrumb: str) -> list[float]:
    with engine.store.snapshot() as conn:
        raw = conn.execute("SELECT e.f32_bytes FROM embeddings e JOIN chunks c ON c.text_hash = e.text_hash "
                           "WHERE c.breadcrumb = ?", (breadcrumb,)).fetchone()[0]
    return np.frombuffer(raw, dtype=np.float32).tolist()


def test_a_model_swapped_behind_the_same_name_is_embedded_again(engine, kb: Path, tmp_path: Path) -> None:
    """The server is restarted with another model under the same name and dimensions (a TEI container or
    a proxy alias re-pointed): the next process finds its vector for a fixed text moved, drops the old
    vectors and makes them again, and says so. Before, every stored vector stayed and was compared with
    query vectors of the new model."""
    notes(kb)
    with model_server("tei") as server:
        embed_with_tei(engine, kb, server.url)
        url = server.url
        assert stored_vector(engine, "Storage › Decision") == pytest.approx(toy_vector(
            "Storage › Decision\nWe keep the index in an embedded relational database file.", ""), abs=1e-6)
    engine.close()
    with model_server("tei") as server:  # the same model again: nothing is made again
        same = Engine(tmp_path / "autodoc.db")
        try:
            same.workspace_configure("kb", tei_config(server.url))
            kept = same.workspace_index("kb", {"wait": "semantic"})
            assert kept["embedding"]["model_replaced"] is None and server.behaviour.batches == 0
        finally:
            same.close()
    with model_server("tei", Behaviour(model="another")) as server:
        later = Engine(tmp_path / "autodoc.db")
        try:
            later.workspace_configure("kb", tei_config(server.url))
            search(later, "relational database", stages=["semantic"])  # holds the old vectors in memory
            report = later.workspace_index("kb", {"wait": "semantic"})
            assert report["embedding"]["embedded"] == 3 and report["semantic"] == "ready"
            assert "changed" in report["embedding"]["model_replaced"]
            assert stored_vector(later, "Storage › Decision") == pytest.approx(toy_vector(
                "Storage › Decision\nWe keep the index in an embedded relational database file.", "another"),
                abs=1e-6)
            again = later.workspace_index("kb", {"wait": "semantic"})  # checked once per process
            assert again["embedding"]["embedded"] == 3
            search(later, "relational database", stages=["semantic"])
            held = next(iter(later._semantic.of(later._workspace("kb")).indexes.values()))
            assert len(held.chunk_ids) == 3
            for chunk, vector in zip(held.chunk_ids.tolist(), held.vectors, strict=True):  # the new model's, all
                with later.store.snapshot() as conn:
                    crumb = conn.execute("SELECT breadcrumb FROM chunks WHERE id = ?", (chunk,)).fetchone()[0]
                assert vector.tolist() == pytest.approx(stored_vector(later, crumb), abs=1e-6)
        finally:
            later.close()
    assert url != server.url


def test_a_fill_of_a_model_that_was_replaced_never_activates_it(engine, kb: Path) -> None:
    """The user switches models while the old one is still filling: when the old fill completes it
    must not become active, nor delete the new model's vectors. Broken on purpose: without the
    configuration check in ``_activate`` the OpenAI model's vectors are gone at the end."""
    for i in range(6):
        write(kb, f"n{i}.md", f"# Note {i}\n\nsockets and packets, part {i}\n")
    with model_server("tei", Behaviour(hold_after=1)) as old, model_server("openai") as new:
        engine.workspace_add("kb", str(kb))
        engine.workspace_configure("kb", {"embedder": {"provider": "tei", "url": old.url, "batch_size": 2,
                                                       "timeout": 120}})
        engine.workspace_index("kb")
        old_ws = engine._workspace("kb")
        filler = threading.Thread(target=engine.fill_vectors, args=(old_ws,))
        filler.start()
        assert old.behaviour.holding.wait(timeout=60)
        engine.workspace_configure("kb", {"embedder": {"provider": "openai", "url": new.url, "model": "toy"}})
        engine.workspace_index("kb", {"wait": "semantic"})
        old.behaviour.release.set()
        filler.join(timeout=120)
        status = engine.workspace_status("kb")
        assert status["semantic"] == "ready"
        assert status["embedder"]["active_model_fp"].startswith("openai:")
        assert search(engine, "sockets", stages=["semantic"])["semantic"] == "ready"


def test_a_vector_that_cannot_be_read_is_left_out_and_read_again_next_time(engine, kb: Path) -> None:
    """Seen once in a host whose fill was writing: a vector the index listed was gone when it read the
    blobs. Reading it must not fail: the readable rows go in, the others are left out, and ``_append`` says
    so (``refresh`` then leaves the epoch at -1, so the next search reads the missing rows again). The
    readable row here is one the index already holds: it is appended a second time, which only shows
    that it went in."""
    notes(kb)
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb", {"wait": "semantic"})
    engine.search_query("kb", "relational database", {"stages": ["semantic"]})
    index = next(iter(engine._semantic.of(engine._workspace("kb")).indexes.values()))
    size, epoch = len(index.chunk_ids), index.epoch
    assert size == 3 and epoch >= 0
    with engine.store.snapshot() as conn:
        assert index._append(conn, [(10**9, 10**9, 1, 10**9)]) is False  # an embedding id no row has
    assert len(index.chunk_ids) == size
    with engine.store.snapshot() as conn:
        chunk, doc, emb = conn.execute("SELECT c.id, c.doc_id, e.id FROM chunks c JOIN embeddings e "
                                       "ON e.text_hash = c.text_hash LIMIT 1").fetchone()
        assert index._append(conn, [(chunk, doc, 1, emb), (10**9, 10**9, 1, 10**9)]) is False
    assert len(index.chunk_ids) == size + 1  # the readable one is in, the other left out


def held_vectors(index) -> dict[int, tuple[int, bool, bytes]]:
    """What a VectorIndex holds, by chunk: (document, eligible, vector bytes)."""
    return {int(c): (int(d), bool(e), v.tobytes())
            for c, d, e, v in zip(index.chunk_ids, index.doc_ids, index.eligible, index.vectors, strict=True)}


def test_a_search_during_a_fill_reads_only_the_new_batches_vectors(engine, kb: Path) -> None:
    """Issue 51.13: a search after a pause while the fill ran took 46 ms against 8 ms with the fill paused,
    because every batch stored made the next search read every vector row and scan every chunk for
    incomplete documents. After a fill's batch, the refresh reads that batch's rows alone, and holds what a
    fresh read holds; after an edit (chunks changed) it reads everything again."""
    for i in range(6):
        parts = "".join(f"## Part {j}\n\nkiwi fact {i} {j}\n\n" for j in range(3))
        write(kb, f"n{i}.md", f"# Note {i}\n\n{parts}")
    with model_server("tei") as server:
        index_in_batches_of_4(engine, kb, server.url)
        ws = engine._workspace("kb")
        runtime = engine._semantic.of(ws)
        embedder = runtime.embedder(ws)
        embedder.probe()
        batches = iter(range(10**6))

        def fill_batches(count: int) -> None:
            stop_at = next(batches) + count
            vectors.fill(engine.store, ws.id, embedder, runtime.fill_progress(),
                         stop=lambda: next(batches) >= stop_at)

        def refresh_reading() -> list[str]:
            """Refresh the search's index as a search does; the statements it ran."""
            statements: list[str] = []
            ws_now = engine._workspace("kb")
            index = runtime.indexes.setdefault(embedder.model_fp, VectorIndex(ws.id, embedder.model_fp))
            with engine.store.snapshot() as conn:
                conn.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
                try:
                    index.refresh(conn, ws_now.vector_epoch)
                finally:
                    conn.exec_trace = None
                fresh = VectorIndex(ws.id, embedder.model_fp)
                fresh.refresh(conn, ws_now.vector_epoch)
            assert held_vectors(index) == held_vectors(fresh)
            return statements

        def read_everything(statements: list[str]) -> bool:
            return any("LEFT JOIN embeddings" in sql or sql.startswith("SELECT c.id, c.doc_id, c.text_hash, e.id "
                                                                      "FROM chunks c JOIN") for sql in statements)

        fill_batches(1)
        assert read_everything(refresh_reading())  # the first read of the workspace's vectors
        for _ in range(2):
            fill_batches(1)
            assert not read_everything(refresh_reading())
        write(kb, "n0.md", "# Note 0\n\n## Part 0\n\nkiwi fact changed\n")
        engine.workspace_index("kb")
        assert read_everything(refresh_reading())
        fill_batches(100)
        assert not read_everything(refresh_reading())
        assert all(eligible for _, eligible, _ in held_vectors(runtime.indexes[embedder.model_fp]).values())


def test_after_each_batch_the_fill_brings_a_searchs_vectors_up_to_date(engine, kb: Path) -> None:
    """Issue 51.13: the fill's thread, not the next search, reads each batch it stores into the vectors a search
    holds (and the semantic state): a search after a pause found them one or more batches behind and read them
    itself."""
    for i in range(6):
        write(kb, f"n{i}.md", f"# Note {i}\n\nkiwi fact {i}\n")
    with model_server("tei") as server:
        index_in_batches_of_4(engine, kb, server.url)
        ws = engine._workspace("kb")
        with checkpoints.Hold("embed.batch", 1) as held:
            filler, errors = fill_in_a_thread(engine)
            assert held.arrived.wait(timeout=60)  # the first batch of 4 is stored
            search(engine, "kiwi", stages=["semantic"])  # a search holds the vectors: 4 of them
            held.release.set()
            filler.join(timeout=120)
        assert not errors
        runtime = engine._semantic.of(ws)
        index = next(iter(runtime.indexes.values()))
        ws_now = engine._workspace("kb")
        assert index.epoch == ws_now.vector_epoch and len(index.chunk_ids) == 6
        assert runtime.state is not None and runtime.state[2] == (6, 6)
