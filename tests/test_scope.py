"""Every workspace at once (issue 49): search.query, search.stream and search.related take a scope (a name, a list
of names, or "*"), through the engine, `autodoc --call` and `serve --stdio`. Real engine, real SQLite file, a real
HTTP embedding server on 127.0.0.1 where the semantic stage matters."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from autodoc_core.errors import INVALID_PARAMS, UNKNOWN_WORKSPACE, AutodocError
from autodoc_core.parse.frontmatter import FacetSchema
from autodoc_core.rank import hits as rank_hits
from autodoc_core.rank.hits import Hit
from autodoc_core.retrieve.query import parse_query
from autodoc_core.search import scope
from autodoc_core.search.answer import QueryInfo, SearchAnswer, StageReport
from autodoc_core.search.stages import Stage
from autodoc_core.search.stream import SearchStream
from autodoc_core.service.engine import Engine
from tests.conftest import StdioServer, call, write
from tests.model_servers import model_server

NO_EMBEDDER = {"embedder": {"provider": "none"}}


def by_words(engine: Engine, *named: tuple[str, Path]) -> None:
    """Add and index these workspaces, (name, folder) each, with no embedding model: searched by words alone."""
    for name, folder in named:
        engine.workspace_add(name, str(folder))
        engine.workspace_configure(name, NO_EMBEDDER)
        engine.workspace_index(name)


def by_meaning(engine: Engine, url: str, *named: tuple[str, Path]) -> None:
    """Add these workspaces with the TEI server at ``url`` as their model, and wait until every section has a
    vector."""
    for name, folder in named:
        engine.workspace_add(name, str(folder))
        engine.workspace_configure(name, {"embedder": {"provider": "tei", "url": url, "timeout": 120}})
        assert engine.workspace_index(name, {"wait": "semantic"})["semantic"] == "ready"


@pytest.fixture
def two(tmp_path: Path, engine: Engine) -> tuple[Path, Path]:
    """Workspace "notes" (one note on the store) and "rfcs" (many documents that mention geckos in passing, one
    about them, and a facet schema with status), indexed by words."""
    notes = tmp_path / "notes"
    write(notes, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\n"
                                "We keep every workspace in one embedded relational store. Gecko is its code name.\n")
    write(notes, "gecko.md", "# Gecko\n\n## Why the index is called Gecko\n\nGecko, the code name: a gecko holds on "
                             "to any wall, as the index holds on to every note. Gecko stays.\n")
    for topic in ("bread", "ovens", "bicycles", "trains", "gardens", "tides"):
        write(notes, f"misc/{topic}.md", f"# {topic.title()}\n\nA note about {topic} and nothing else.\n")
    rfcs = tmp_path / "rfcs"
    write(rfcs, "_schema/frontmatter.yaml", "common:\n  status: string\n")
    for n in range(30):
        write(rfcs, f"rfc-{n:02}.md", f"---\nstatus: final\n---\n# RFC {n}\n\n## Notes\n\n"
                                      f"Among other animals a gecko appears once in RFC {n}, with lizards and birds "
                                      "and a long list of other words about protocols, servers and clients.\n")
    write(rfcs, "geckos.md", "---\nstatus: draft\n---\n# Geckos\n\n## Toe pads\n\n"
                             "Geckos climb glass: gecko toe pads hold by van der Waals forces.\n")
    by_words(engine, ("notes", notes), ("rfcs", rfcs))
    return notes, rfcs


def where(answer: dict) -> list[tuple[str, str]]:
    return [(hit["workspace"], hit["path"]) for hit in answer["hits"]]


def test_every_workspace_is_searched_and_each_hit_names_its_own(engine: Engine, two: tuple[Path, Path]) -> None:
    answer = engine.search_query("*", "gecko", {"limit": 5}).to_wire()
    assert answer["scope"] == {"asked": "*", "workspaces": ["notes", "rfcs"]}
    assert set(answer["workspaces"]) == {"notes", "rfcs"}
    assert answer["workspaces"]["rfcs"]["root"] == str(two[1]) and answer["workspaces"]["notes"]["folder"] == "ok"
    assert sum(ws["hits"] for ws in answer["workspaces"].values()) == len(answer["hits"]) == 5
    # The small workspace's one match is not crowded out by the 30 passing mentions of the large one.
    assert ("notes", "gecko.md") in where(answer)[:2] and ("rfcs", "geckos.md") in where(answer)[:2]
    relevance = [hit["relevance"] for hit in answer["hits"]]
    assert relevance == sorted(relevance, reverse=True)
    assert answer["stages"]["performed"] == ["lexical"] and answer["semantic"] == "off"


def test_one_name_answers_as_before_with_the_workspace_added(engine: Engine, two: tuple[Path, Path]) -> None:
    answer = engine.search_query("rfcs", "gecko", {"limit": 5}).to_wire()
    assert answer["scope"] == {"asked": "rfcs", "workspaces": ["rfcs"]} and list(answer["workspaces"]) == ["rfcs"]
    assert {hit["workspace"] for hit in answer["hits"]} == {"rfcs"}
    listed = engine.search_query(["rfcs", "rfcs"], "gecko", {"limit": 5}).to_wire()  # searched once
    assert listed["scope"] == {"asked": ["rfcs", "rfcs"], "workspaces": ["rfcs"]}
    assert where(listed) == where(answer) and [h["relevance"] for h in listed["hits"]] == \
        [h["relevance"] for h in answer["hits"]]


def test_bad_scopes_are_refused_with_what_to_do(engine: Engine, two: tuple[Path, Path], tmp_path: Path) -> None:
    with pytest.raises(AutodocError) as unknown:
        engine.search_query(["notes", "nope"], "gecko")
    assert unknown.value.code == UNKNOWN_WORKSPACE and "'nope'" in unknown.value.reason
    assert "notes, rfcs" in unknown.value.reason and "did you mean" not in unknown.value.reason
    write(tmp_path / "ops", "runbook.md", "# Runbook\n\nRestart the gecko service.\n")
    by_words(engine, ("ops", tmp_path / "ops"))
    with pytest.raises(AutodocError) as swapped:  # two letters swapped, as the picker guesses (a walk: `osp`)
        engine.search_query("osp", "gecko")
    assert "did you mean 'ops'?" in swapped.value.reason, swapped.value.reason
    engine.workspace_remove("ops")
    for asked in ("nots", ["rfcs", "nots"]):  # a typo is named as one ("add it with workspace.add" alone misled)
        with pytest.raises(AutodocError) as typo:
            engine.search_query(asked, "gecko")
        assert "no workspace named 'nots' (did you mean 'notes'? this database has notes, rfcs)" in \
            typo.value.reason, typo.value.reason
    with pytest.raises(AutodocError) as empty:
        engine.search_query([], "gecko")
    assert empty.value.code == INVALID_PARAMS and "empty list" in empty.value.reason
    with pytest.raises(AutodocError) as wrong:
        engine.search_query(7, "gecko")
    assert wrong.value.code == INVALID_PARAMS
    for asked, said in ((None, "got null"), (["notes", 3], 'got ["notes", 3]')):  # as sent, not as Python has it
        with pytest.raises(AutodocError) as odd:
            engine.search_query(asked, "gecko")
        assert said in odd.value.reason, odd.value.reason
    with pytest.raises(AutodocError) as every:  # a call of one workspace given "*" suggested adding one named "*"
        engine.doc_read("*", "gecko.md")
    assert every.value.code == INVALID_PARAMS and "name it (a hit's 'workspace')" in every.value.reason
    with pytest.raises(AutodocError) as source:  # related's source is in one workspace (a review)
        engine.search_related("*", "gecko.md", {"workspace": "*"})
    assert source.value.code == INVALID_PARAMS and "not a scope" in source.value.reason
    assert "add it" not in typo.value.reason  # a misspelt name is not one to add
    with Engine(tmp_path / "empty.db") as nothing, pytest.raises(AutodocError) as none:
        nothing.search_query("*", "gecko")
    assert none.value.code == UNKNOWN_WORKSPACE and "autodoc --call workspace.add" in none.value.reason


def test_facets_filter_each_workspace_by_its_own_fields(engine: Engine, two: tuple[Path, Path]) -> None:
    answer = engine.search_query("*", "gecko", {"facets": {"status": "draft"}}).to_wire()
    assert where(answer) == [("rfcs", "geckos.md")]
    assert answer["workspaces"]["notes"]["hits"] == 0 and "status" in answer["workspaces"]["notes"]["note"]
    assert any(problem.startswith("notes: not searched") for problem in answer["query"]["problems"])
    # In the query, the same: a workspace without the field is not searched for the filter's words instead.
    typed = engine.search_query("*", "gecko status:draft").to_wire()
    assert where(typed) == [("rfcs", "geckos.md")]
    assert "no document has a 'status' field (status:draft)" in \
        typed["workspaces"]["notes"]["note"]
    excluded = engine.search_query("*", "gecko -status:final", {"limit": 40}).to_wire()  # excludes nothing there
    assert ("notes", "gecko.md") in where(excluded) and ("rfcs", "rfc-00.md") not in where(excluded)
    assert excluded["query"]["problems"] == []  # nor is it said ("notes: 'status' is not a filter field ...")
    misspelt = engine.search_query("*", "gecko -statu:final").to_wire()  # a field no workspace has: still said
    said = misspelt["query"]["problems"]
    assert [problem.split(":")[0] for problem in said] == ["notes", "rfcs"], said
    assert all("so '-statu:final' was left out" in problem for problem in said)
    assert "(did you mean status:?)" in said[1]


def test_workspaces_left_out_for_one_reason_are_said_once(engine: Engine, two: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    """`type:adr` over five workspaces listed "X: not searched: no document has a 'type' field ..."
    once for each workspace without the field."""
    write(tmp_path / "misc", "a.md", "# A\n\nA gecko note.\n")
    by_words(engine, ("misc", tmp_path / "misc"))
    answer = engine.search_query("*", "gecko status:draft").to_wire()
    assert answer["query"]["problems"] == [
        "misc, notes: not searched: no document has a 'status' field (status:draft)"]


def test_a_workspace_whose_folder_is_gone_is_named_and_still_searched(engine: Engine,
                                                                       two: tuple[Path, Path]) -> None:
    shutil.rmtree(two[0])
    answer = engine.search_query("*", "relational store").to_wire()
    assert ("notes", "adr/0002.md") in where(answer)
    assert answer["workspaces"]["notes"]["folder"] == "gone" and "no longer exists" in \
        answer["workspaces"]["notes"]["note"]
    # said with the query's problems too, short enough for a picker's title (the walk: four workspaces, one folder
    # gone, and the picker said nothing until Enter opened nothing)
    assert "notes: folder gone, its hits come from its index" in answer["query"]["problems"]


def test_a_hit_whose_folder_is_gone_is_read_from_the_index_s_copy(engine: Engine, two: tuple[Path, Path]) -> None:
    """Its hits are still searched, and reading one said it did not exist: an agent was handed a hit it could not
    open. The index's copy of the document is read instead, at the same lines, and the answer says so."""
    shutil.rmtree(two[0])
    hit = next(h for h in engine.search_query("*", "relational store").to_wire()["hits"] if h["workspace"] == "notes")
    read = engine.doc_read("notes", hit["path"], {"line_start": hit["line_start"], "line_end": hit["line_end"]})
    assert "We keep every workspace in one embedded relational store." in read["text"]
    assert read["line_start"] == hit["line_start"] and "is gone" in read["text_source"]
    with pytest.raises(AutodocError) as never_indexed:
        engine.doc_read("notes", "adr/0003.md")
    assert "does not exist" in never_indexed.value.reason


def test_the_merged_query_says_every_filter_applied_whatever_the_order(engine: Engine,
                                                                       two: tuple[Path, Path]) -> None:
    """The merged answer's query was the first workspace's: `-status:draft` over notes (no such field) and rfcs
    said no filter when notes came first, though rfcs applied it (found by a walk)."""
    for asked in ("*", ["notes", "rfcs"], ["rfcs", "notes"]):
        wire = engine.search_query(asked, "gecko -status:draft").to_wire()
        assert {"field": "status", "value": "draft", "negated": True} in wire["query"]["facets"], (asked, wire)
    # related across workspaces: the words chosen from the source, as its own workspace's answer says them
    alone = engine.search_related("rfcs", "geckos.md", {"line": 7}).to_wire()
    every = engine.search_related("*", "geckos.md", {"line": 7}).to_wire()
    assert every["query"]["terms"] == alone["query"]["terms"]


def test_what_was_searched_is_said_before_each_workspace_s_problems(engine: Engine, two: tuple[Path, Path]) -> None:
    """A walk at 80 columns: the picker's footer has room for one problem, and showed a gone workspace's hint on a
    facet value while four workspaces were not searched at all. Which workspaces were searched, and how, come
    first."""
    shutil.rmtree(two[1])
    problems = engine.search_query("*", "gecko status:draftt").to_wire()["query"]["problems"]
    assert problems[0] == "notes: not searched: no document has a 'status' field (status:draftt)", problems
    assert problems[1] == "rfcs: folder gone, its hits come from its index", problems
    assert "draftt" in problems[2], problems


def test_a_workspace_sharing_a_few_of_the_source_s_words_does_not_flood_its_related_sections(
        engine: Engine, tmp_path: Path) -> None:
    """A walk: a workspace of Chinese notes searched by words alone listed six sections above the source's own
    related ones, for three English words of the source they held (`full`, `text`, `writes`): only the source's
    words a workspace holds are searched there, and they were measured against themselves. What they could score
    counts the words the source's own workspace chose too, each missing one at its full weight."""
    kb, zh = tmp_path / "kb", tmp_path / "zh"
    write(kb, "adr/0002.md", "# ADR 0002 Keep the index in SQLite\n\n## Decision\n\nWe keep every workspace in one "
              "embedded relational store. Full text writes go through one writer with a write-ahead log.\n")
    write(kb, "adr/0003.md", "# ADR 0003 Backups\n\n## Decision\n\nThe embedded relational store is copied with the "
              "online backup API while the writer keeps its write-ahead log.\n")
    write(kb, "notes/bread.md", "# Bread\n\nFlour, water, salt and yeast make bread.\n")
    for n in range(4):
        write(zh, f"fmt{n}.md", f"# 格式化输出 {n}\n\n打印 full text 的时候，程序 writes 到标准输出，第 {n} 章。\n")
    with model_server("tei") as server:
        by_meaning(engine, server.url, ("kb", kb))
        by_words(engine, ("zh", zh))
        answer = engine.search_related("*", "adr/0002.md", {"line": 5, "workspace": "kb"}).to_wire()
    assert where(answer)[0] == ("kb", "adr/0003.md")
    weak = [hit["relevance"] for hit in answer["hits"] if hit["workspace"] == "zh"]
    assert weak and max(weak) < 0.2, answer["hits"]  # each was 0.90 to 0.95
    # a workspace holding the same notes matches as well as the source's own (a review: not held down)
    shutil.copytree(kb, tmp_path / "copy")
    by_words(engine, ("copy", tmp_path / "copy"))
    both = engine.search_related(["kb", "copy"], "adr/0002.md", {"line": 5, "workspace": "kb"}).to_wire()
    figure = {(hit["workspace"], hit["path"]): hit["relevance"] for hit in both["hits"]}
    assert figure[("copy", "adr/0003.md")] >= 0.9 * figure[("kb", "adr/0003.md")], both["hits"]


def test_related_sections_come_from_every_workspace(engine: Engine, two: tuple[Path, Path]) -> None:
    source = two[1] / "geckos.md"
    answer = engine.search_related("*", str(source), {"line": 7}).to_wire()
    assert answer["related"]["workspace"] == "rfcs" and answer["related"]["path"] == "geckos.md"
    assert {"notes", "rfcs"} <= {hit["workspace"] for hit in answer["hits"]}
    named = engine.search_related(["notes"], "geckos.md", {"workspace": "rfcs", "line": 7}).to_wire()
    assert {hit["workspace"] for hit in named["hits"]} == {"notes"}
    one = engine.search_related("notes", "geckos.md", {"workspace": "rfcs", "line": 7}).to_wire()
    assert where(one) == where(named) and one["related"]["workspace"] == "rfcs"
    only_there = engine.search_related("*", "geckos.md", {"line": 7}).to_wire()  # only rfcs holds geckos.md
    assert only_there["related"]["workspace"] == "rfcs" and where(only_there) == where(answer)
    write(two[0], "geckos.md", "# Geckos here too\n\nA second note named like the RFC.\n")
    engine.workspace_index("notes")
    with pytest.raises(AutodocError) as unsaid:
        engine.search_related("*", "geckos.md")
    assert unsaid.value.code == INVALID_PARAMS and "notes, rfcs each hold geckos.md" in unsaid.value.reason
    # a list names the workspaces that count: only rfcs of these holds it (the walk: refused, naming others)
    listed = engine.search_related(["rfcs"], "geckos.md", {"line": 7}).to_wire()
    assert listed["related"]["path"] == "geckos.md" and {w for w, _ in where(listed)} == {"rfcs"}


def test_related_sections_of_several_workspaces_keep_their_own_relevance(engine: Engine,
                                                                         two: tuple[Path, Path]) -> None:
    """A new user saw every related hit of one workspace at 1.00 (each took its workspace's best match): each
    hit's relevance is now its own within its workspace, scaled by that workspace's best, never rising down
    a workspace's list."""
    answer = engine.search_related("*", str(two[1] / "geckos.md"), {"line": 7, "limit": 20}).to_wire()
    for name in ("notes", "rfcs"):
        figures = [hit["relevance"] for hit in answer["hits"] if hit["workspace"] == name]
        assert figures == sorted(figures, reverse=True), (name, figures)
    rfcs = [hit["relevance"] for hit in answer["hits"] if hit["workspace"] == "rfcs"]
    assert len(set(rfcs)) > 1, rfcs


def test_a_workspace_not_embedded_is_not_buried_by_another_s_fused_scores(engine: Engine,
                                                                            two: tuple[Path, Path],
                                                                            tmp_path: Path) -> None:
    """One workspace searched by words and meaning, one by words alone: the words-only one's best hit still comes
    first for a query that only it matches well, and the answer says which workspace skipped the semantic stage;
    a streamed search of both hands over one merged lexical answer first."""
    with model_server("tei") as server:
        engine.workspace_configure("rfcs", {"embedder": {"provider": "tei", "url": server.url, "timeout": 120},
                                            "semantic_deadline": 60})
        assert engine.workspace_index("rfcs", {"wait": "semantic"})["semantic"] == "ready"
        partials: list[dict] = []
        answer = engine.search("*", "embedded relational store", {"limit": 5},
                               SearchStream(on_partial=partials.append)).to_wire()
    assert where(answer)[0] == ("notes", "adr/0002.md")
    assert answer["stages"]["performed"] == ["lexical", "semantic"] and answer["semantic"] == "off"
    assert answer["stages"]["skipped"]["semantic"].startswith("notes: ")
    assert answer["workspaces"]["rfcs"]["semantic"] == "ready"
    assert len(partials) == 1 and partials[0]["partial"] and partials[0]["stages"]["pending"] == ["semantic"]
    assert partials[0]["scope"]["workspaces"] == ["notes", "rfcs"] and where(partials[0])[0] == ("notes",
                                                                                                  "adr/0002.md")


def test_the_command_line_and_serve_stdio_take_a_scope(engine: Engine, two: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    engine.close()
    db = tmp_path / "autodoc.db"
    code, answer = call(db, "search.query", ["*", "gecko", {"limit": 3}])
    assert code == 0 and answer["scope"]["workspaces"] == ["notes", "rfcs"]
    assert {hit["workspace"] for hit in answer["hits"]} == {"notes", "rfcs"}
    code, refused = call(db, "search.query", [["notes", "nope"], "gecko"])
    assert code != 0 and refused["error"]["code"] == UNKNOWN_WORKSPACE and "nope" in refused["error"]["data"]["reason"]
    stdio = StdioServer(db)
    try:
        served = stdio.ask("search.query", ["*", "gecko", {"limit": 3}])["result"]
        assert where(served) == where(answer)
        message = {"jsonrpc": "2.0", "id": "s1", "method": "search.stream", "params": [["rfcs", "notes"], "gecko"]}
        stdio.proc.stdin.write(json.dumps(message).encode() + b"\n")
        stdio.proc.stdin.flush()
        partial = json.loads(stdio.lines.next(timeout=120))  # the semantic stage is still to come (and skipped)
        streamed = json.loads(stdio.lines.next(timeout=120))
        related = stdio.ask("search.related", ["*", str(two[1] / "geckos.md"), {"line": 7}])["result"]
        empty = stdio.ask("search.query", [[], "gecko"])
    finally:
        stdio.close()
    assert partial["method"] == "search.partial" and partial["params"]["answer"]["partial"] is True
    assert partial["params"]["answer"]["scope"]["workspaces"] == ["rfcs", "notes"]
    assert streamed["id"] == "s1" and streamed["result"]["scope"]["workspaces"] == ["rfcs", "notes"]
    assert related["related"]["workspace"] == "rfcs" and "notes" in {h["workspace"] for h in related["hits"]}
    assert empty["error"]["code"] == INVALID_PARAMS


def test_workspaces_of_one_model_embed_the_query_once(engine: Engine, two: tuple[Path, Path]) -> None:
    """A search of several workspaces shares the work they have in common: the query's embedding."""
    with model_server("tei") as server:
        for name in ("notes", "rfcs"):
            engine.workspace_configure(name, {"embedder": {"provider": "tei", "url": server.url, "timeout": 120},
                                              "semantic_deadline": 60})
            assert engine.workspace_index(name, {"wait": "semantic"})["semantic"] == "ready"
        before = len(server.behaviour.requests)
        answer = engine.search_query("*", "which lizard climbs glass", {"limit": 50}).to_wire()
        asked = [r for r in server.behaviour.requests[before:] if "which lizard climbs glass" in json.dumps(r["body"])]
    assert answer["stages"]["performed"] == ["lexical", "semantic"] and answer["semantic"] == "ready"
    assert {hit["workspace"] for hit in answer["hits"]} == {"notes", "rfcs"}
    assert len(asked) == 1


def test_a_workspace_still_embedding_is_named_with_its_state_and_searched(engine: Engine,
                                                                          two: tuple[Path, Path]) -> None:
    """The filler holds the embedder's second batch of rfcs: the search of both workspaces says rfcs is partial,
    how far its vectors reach, and the whole search's semantic state is the least ready; its hits still come."""
    from tests.conftest import wait_until
    from tests.model_servers import Behaviour

    with model_server("tei", Behaviour(hold_after=1)) as server:
        engine.workspace_configure("rfcs", {"embedder": {"provider": "tei", "url": server.url, "batch_size": 2,
                                                         "timeout": 120}, "semantic_deadline": 60})
        engine.start_background()
        assert server.behaviour.holding.wait(timeout=60)
        answer = engine.search_query(["rfcs", "notes"], "gecko toe pads", {"stages": ["lexical", "semantic"]})
        wire = answer.to_wire()
        server.behaviour.release.set()
        wait_until(lambda: engine.workspace_status("rfcs")["semantic"] == "ready", what="the vectors to fill")
    rfcs = wire["workspaces"]["rfcs"]
    assert rfcs["semantic"] == "partial" and "not all embedded yet: 2 of " in rfcs["note"]
    assert wire["semantic"] == "off"  # notes has no embedder: the least ready of off and partial
    assert where(wire)[0] == ("rfcs", "geckos.md")
    assert wire["stages"]["skipped"]["semantic"].startswith("notes: ")



def test_an_identifier_word_for_word_comes_before_another_workspace_s_loose_matches(engine: Engine,
                                                                                    tmp_path: Path) -> None:
    """The section holding the identifier comes first in its own workspace (fuse.holders_first), however weak its
    cosine; across workspaces it still comes before notes that only share the identifier's words (closer by
    meaning), and is shown no less relevant than they are."""
    code, prose = tmp_path / "code", tmp_path / "prose"
    write(code, "mgmt.md", "# Management ConfigMap\n\n## Keys\n\n| key | meaning |\n|---|---|\n"
          "| `usage-report-proxy-host` | where reports go |\n| `license-token` | the token |\n\n"
          + "Other settings of the management block are described below with their defaults. " * 6 + "\n")
    for n in range(4):
        write(prose, f"note-{n}.md", f"# Note {n}\n\n## Host\n\nThe host of the proxy sends a report on usage; usage "
                                     f"of the proxy host, report {n}.\n")
    with model_server("tei") as server:
        by_meaning(engine, server.url, ("code", code), ("prose", prose))
        alone = engine.search_query("code", "usage-report-proxy-host", {"limit": 5}).to_wire()
        answer = engine.search_query("*", "usage-report-proxy-host", {"limit": 5}).to_wire()
    assert where(alone)[0] == ("code", "mgmt.md") and "symbol" in alone["hits"][0]["via"]
    assert where(answer)[0] == ("code", "mgmt.md") and ("prose", "note-1.md") in where(answer)
    relevance = [hit["relevance"] for hit in answer["hits"]]
    assert relevance == sorted(relevance, reverse=True)



def test_a_pasted_identifier_no_section_holds_is_said_once(engine: Engine, tmp_path: Path) -> None:
    """A pasted identifier that no section holds as written (a typo) gets hits by its pieces and meaning: the
    answer says so, once for a search of several workspaces, and only when none of them holds it."""
    code, prose = tmp_path / "code", tmp_path / "prose"
    write(code, "mgmt.md", "# Management ConfigMap\n\n## Keys\n\n`usage-report-proxy-host` is where reports go.\n")
    for n in range(3):
        write(prose, f"note-{n}.md", f"# Note {n}\n\n## Host\n\nThe proxy host sends a usage report, report {n}.\n")
    plain = tmp_path / "plain"  # searched by words alone: its holders are counted all the same
    write(plain, "proxy.md", "# Proxy\n\n## Reports\n\nThe usage report goes through the proxy host.\n")
    said = "no section holds `usage-report-proxy-hots` as written: these hits only share its words or meaning"
    with model_server("tei") as server:
        by_meaning(engine, server.url, ("code", code), ("prose", prose))
        by_words(engine, ("plain", plain))
        plain_typo = engine.search_query("plain", "usage-report-proxy-hots").to_wire()
        typo_alone = engine.search_query("code", "usage-report-proxy-hots").to_wire()
        typo_everywhere = engine.search_query("*", "usage-report-proxy-hots").to_wire()
        filtered = engine.search_query("code", "usage-report-proxy-host", {"paths": ["nothing-here/"]}).to_wire()
        held = engine.search_query("*", "usage-report-proxy-host").to_wire()
        held_elsewhere = engine.search_query("prose", "usage-report-proxy-host").to_wire()
    assert typo_alone["hits"] and typo_alone["query"]["problems"] == [said]
    assert plain_typo["hits"] and plain_typo["query"]["problems"] == [said]
    assert typo_everywhere["hits"] and typo_everywhere["query"]["problems"] == [said]
    # a filter may have left the holder out: said so (a paths prefix that names nothing is said too)
    assert any(problem.startswith("no section the filters let through holds `usage-report-proxy-host`")
               for problem in filtered["query"]["problems"]), filtered["query"]["problems"]
    assert where(held)[0] == ("code", "mgmt.md") and held["query"]["problems"] == []
    assert held_elsewhere["query"]["problems"] == [said.replace("hots", "host")]


def test_a_pasted_identifier_s_holder_keeps_its_relevance_beside_a_workspace_searched_by_words(
        engine: Engine, tmp_path: Path) -> None:
    """A workspace without a model compares every hit by its words: an identifier is a phrase to the word search,
    which the vocabulary cannot count, so no hit had a words figure and every row read 0.00, the holder too."""
    code, words = tmp_path / "code", tmp_path / "words"
    write(code, "guide.md", "# Guide\n\n## Election\n\nSet `raft.election_timeout_ms` to 300 on slow networks.\n")
    for n in range(4):
        write(code, f"note-{n}.md", f"# Note {n}\n\n## Leaders\n\nA leader election in raft takes a while, {n}.\n")
        write(words, f"words-{n}.md", f"# Words {n}\n\n## Timeouts\n\nAn election timeout in ms, {n}.\n")
    with model_server("tei") as server:
        by_meaning(engine, server.url, ("code", code))
        by_words(engine, ("words", words))
        answer = engine.search_query("*", "raft.election_timeout_ms", {"limit": 5}).to_wire()
        related = engine.search_related("*", "guide.md", {"line": 5}).to_wire()
    assert answer["stages"]["skipped"]["semantic"].startswith("words: ")
    assert where(answer)[0] == ("code", "guide.md") and answer["hits"][0]["relevance"] == 1.0, answer["hits"]
    # related sections say the same reason (they said "code embeds with another model than this workspace")
    assert related["stages"]["skipped"]["semantic"] == "words: no embedding model is configured for this workspace"


def test_a_pasted_line_s_holders_come_before_another_workspace_s_loose_matches(engine: Engine,
                                                                            tmp_path: Path) -> None:
    """A line pasted from a log or an error (four words or more) is held word for word by the sections that come
    first in their own workspace (fuse.holders_first); across workspaces they still come before notes elsewhere
    that only share its words or meaning."""
    ops, prose = tmp_path / "ops", tmp_path / "prose"
    write(ops, "runbook.md", "# Runbook\n\n## Known errors\n\n"
          + "Other errors of the deployment are listed below with their fixes and owners. " * 6
          + "\n\n`connection reset by peer while reclaiming the batch` means the queue restarted.\n")
    for n in range(4):
        write(prose, f"note-{n}.md", f"# Note {n}\n\n## Reclaiming a batch\n\nReclaiming the batch: a peer resets "
                                     f"the connection while a batch is reclaimed; connection reset, peer, batch {n}.\n")
    line = "connection reset by peer while reclaiming the batch"
    with model_server("tei") as server:
        by_meaning(engine, server.url, ("ops", ops), ("prose", prose))
        alone = engine.search_query("ops", line, {"limit": 5}).to_wire()
        answer = engine.search_query("*", line, {"limit": 5}).to_wire()
    assert alone["query_shape"]["phrase"] == line and alone["query"]["holding_pasted"] == 1
    assert where(alone)[0] == ("ops", "runbook.md")
    assert where(answer)[0] == ("ops", "runbook.md"), where(answer)
    relevance = [hit["relevance"] for hit in answer["hits"]]
    assert relevance == sorted(relevance, reverse=True)


def test_an_identifier_in_a_sentence_does_not_put_its_holders_first(engine: Engine, tmp_path: Path) -> None:
    """Only a pasted identifier's holders lead the merged list. In a sentence the identifier is one word among
    others (in its own workspace too, fuse.symbol_only_last): the page that answers the sentence is not pushed
    below every section elsewhere that merely names the identifier (the KEPs' sections naming gRPC came before
    techdocs' page on a failed gRPC message)."""
    guide, code = tmp_path / "guide", tmp_path / "code"
    write(guide, "retries.md", "# Retries\n\n## How failed calls are retried\n\nFailed calls are retried three "
                               "times with a growing backoff; failed calls retried past the budget are dropped.\n")
    for n in range(3):
        write(code, f"module-{n}.md", f"# Module {n}\n\n## Loader\n\nThe loader of module {n} calls `fetchBatch` "
                                      "once at start.\n")
    for folder in (guide, code):
        for topic in ("stoves", "kites", "boats", "maps", "clocks", "fences"):
            write(folder, f"misc/{topic}.md", f"# {topic.title()}\n\nA note about {topic} and nothing else.\n")
    by_words(engine, ("guide", guide), ("code", code))
    query = "how are failed calls retried by fetchBatch"
    own = engine.search_query("code", query, {"limit": 5}).to_wire()
    assert own["query_shape"]["identifiers"] == ["fetchBatch"] and not own["query_shape"]["pasted"]
    assert [hit["path"] for hit in own["hits"] if "symbol" in hit["via"]] == [f"module-{n}.md" for n in range(3)]
    answer = engine.search_query("*", query, {"limit": 5}).to_wire()
    assert where(answer)[0] == ("guide", "retries.md"), where(answer)


def test_merged_hits_carry_the_snippets_their_own_workspace_gives(engine: Engine, two: tuple[Path, Path],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Each workspace's search leaves snippets out; the merged hits get theirs once merged (four workspaces made
    40 snippets to show 10)."""
    made: list[int] = []
    make = rank_hits.with_snippets
    monkeypatch.setattr(rank_hits, "with_snippets", lambda conn, hits, words: made.extend(h.chunk_id for h in hits)
                        or make(conn, hits, words))
    merged = engine.search_query("*", "gecko", {"limit": 3}).to_wire()
    assert sorted(made) == sorted(hit["chunk_id"] for hit in merged["hits"])  # the 3 shown hits', each once
    merged = engine.search_query("*", "gecko toe pads", {"limit": 6}).to_wire()
    own = {(name, hit["chunk_id"]): hit["snippet"] for name in ("notes", "rfcs")
           for hit in engine.search_query(name, "gecko toe pads", {"limit": 40}).to_wire()["hits"]}
    assert {hit["workspace"] for hit in merged["hits"]} == {"notes", "rfcs"}
    assert all(hit["snippet"] and hit["snippet"] == own[hit["workspace"], hit["chunk_id"]] for hit in merged["hits"])
    bare = engine.search_query("*", "gecko toe pads", {"limit": 6, "snippets": False}).to_wire()
    assert where(bare) == where(merged) and {hit["snippet"] for hit in bare["hits"]} == {""}
    with pytest.raises(AutodocError) as refused:  # a bad option is still each workspace's error
        engine.search_query("*", "gecko", {"snippets": "yes"})
    assert refused.value.code == INVALID_PARAMS and "snippets" in refused.value.reason


def listed(*bm25: float) -> SearchAnswer:
    """A workspace's answer, searched by words alone, whose hits (in its own order) scored ``bm25`` of 10."""
    hits = [Hit(f"{n}.md", None, None, "section", 0, 1, 1, 1, 1.0 - n / 10, 0.0, ("lexical",), 1, False, None, n,
                chunk_id=n, bm25=score) for n, score in enumerate(bm25)]
    report = StageReport([Stage.LEXICAL], [Stage.LEXICAL], query_info=QueryInfo(lexical_attainable=10.0))
    return SearchAnswer(hits, "lexical", "off", report, parse_query("store", FacetSchema()), [], {})


def test_a_workspace_full_of_the_query_s_words_comes_before_one_that_matches_as_well(engine: Engine,
                                                                                     tmp_path: Path) -> None:
    """The same section in two workspaces matches a query about as well by its words' BM25 in each (each over what
    the words could score there; the design's title names them too): the one of the workspace whose documents are
    full of those words comes first (NGINX guides beside Kubernetes design documents, asked about NGINX's
    gateway), and the other is still listed."""
    section = "## Gateway and websockets\n\nThe NGINX gateway passes websockets through to the upstream app.\n"
    designs, guides = tmp_path / "designs", tmp_path / "guides"
    for n, topic in enumerate(("scheduling", "volumes", "probes", "quotas", "leases", "tokens", "events")):
        write(designs, f"kep-{n}.md", f"# KEP {n}: {topic}\n\n## Summary\n\nA design for {topic} in the cluster.\n")
        write(guides, f"guide-{n}.md", f"# NGINX {topic}\n\n## Summary\n\nHow NGINX handles {topic}; the NGINX "
                                       "gateway and its upstreams.\n")
    write(designs, "kep-gateway.md", "# KEP 9: NGINX gateway websockets\n\n" + section)  # its title says them too
    write(guides, "guide-gateway.md", "# Upstreams\n\n" + section)
    by_words(engine, ("designs", designs), ("guides", guides))
    answer = engine.search_query("*", "nginx gateway websockets", {"limit": 4}).to_wire()
    assert where(answer)[:2] == [("guides", "guide-gateway.md"), ("designs", "kep-gateway.md")], where(answer)


def test_a_workspace_holding_none_of_the_query_s_words_keeps_a_share(engine: Engine, two: tuple[Path, Path]) -> None:
    """Its hits are found by meaning alone: a share of 0 made their factor 0 and every one of them read 0.00 below
    the other workspaces' weakest. Each word's share counts half a section more (as BM25's IDF does)."""
    from autodoc_core.retrieve import lexical
    from autodoc_core.retrieve.query import parse_query as parse
    from autodoc_core.store import workspace as workspaces

    frequencies = lexical.DocumentFrequencies()
    with engine.store.snapshot() as conn:
        notes = workspaces.get(conn, "notes")
        total = frequencies.total(conn, notes.id)
        none = lexical.prevalence(conn, notes.id, parse("postgres vacuum", FacetSchema()).terms, frequencies)
        some = lexical.prevalence(conn, notes.id, parse("gecko vacuum", FacetSchema()).terms, frequencies)
    assert none == 0.5 / (total + 0.5) and some > none > 0


def test_a_workspace_s_hits_are_scaled_by_how_common_the_query_s_words_are_there() -> None:
    """Hits that match as well are ordered by their workspace's prevalence factor: its words' mean share of its
    sections over the most of any workspace, to PREVALENCE_POWER_WORDS by words alone; unmeasured, no factor."""
    notes, rfcs = listed(6.0, 3.0), listed(6.0, 3.0)
    for answer, share in ((notes, 0.01), (rfcs, 0.16)):
        answer.report.query_info.lexical_prevalence, answer.report.query_info.lexical_sections = share, 20_000
    merged = scope._merged_hits({"notes": notes, "rfcs": rfcs}, 4)
    shrunk = scope._shrunk({"notes": (0.01, 20_000), "rfcs": (0.16, 20_000)})
    factor = (shrunk["notes"] / shrunk["rfcs"]) ** scope.PREVALENCE_POWER_WORDS  # 0.44: below the rfcs' second hit
    assert abs(shrunk["notes"] - 0.01) < 0.001 and abs(shrunk["rfcs"] - 0.16) < 0.001  # large: barely drawn in
    assert [(hit.workspace, hit.path, hit.relevance) for hit in merged] == [
        ("rfcs", "0.md", 1.0), ("rfcs", "1.md", 0.5), ("notes", "0.md", round(factor, 4)),
        ("notes", "1.md", round(0.5 * factor, 4))]
    rfcs.report.query_info.lexical_prevalence = None
    assert [hit.workspace for hit in scope._merged_hits({"notes": notes, "rfcs": rfcs}, 4)][:2] == ["notes", "rfcs"]


def test_a_stage_skipped_for_one_reason_by_several_workspaces_says_it_once() -> None:
    """`autodoc search` of a Chinese query printed the English-only model's 300-character sentence once for each
    of four workspaces: each reason is said once, after the workspaces that gave it."""
    english, none = "the default model is English-only", "no embedding model is configured for this workspace"
    answers = {}
    for name, why in (("adr", english), ("notes", english), ("techdocs", none), ("zh", english)):
        answers[name] = listed(5.0)
        answers[name].report = StageReport([Stage.LEXICAL, Stage.SEMANTIC], [Stage.LEXICAL], {Stage.SEMANTIC: why})
    assert scope._skipped(answers) == {Stage.SEMANTIC: f"adr, notes, zh: {english}; techdocs: {none}"}
    del answers["techdocs"]
    assert scope._skipped(answers) == {Stage.SEMANTIC: english}
    # a reason every workspace gave of itself is said of them all (the walk: "rerank: no ranker is configured for
    # this workspace" in an answer of eight)
    for answer in answers.values():
        answer.report = StageReport([Stage.LEXICAL, Stage.RERANK], [Stage.LEXICAL],
                                    {Stage.RERANK: "no ranker is configured for this workspace"})
    assert scope._skipped(answers) == {Stage.RERANK: "no ranker is configured for any workspace searched"}


def both(cosines: list[float], best_cosine: float) -> SearchAnswer:
    """A workspace's answer by both retrievers (one encoder), its hits' raw cosines in its order, the best of its
    semantic candidates ``best_cosine`` (listed or not)."""
    answer = listed(*[5.0] * len(cosines))
    for hit, cosine in zip(answer.hits, cosines, strict=True):
        hit.cosine = cosine
    info = QueryInfo(lexical_attainable=10.0, lexical_match=0.5, semantic_match=best_cosine, encoder="e")
    answer.report = StageReport([Stage.LEXICAL, Stage.SEMANTIC], [Stage.LEXICAL, Stage.SEMANTIC], query_info=info)
    return answer


def test_a_hit_s_merged_relevance_does_not_move_with_the_limit() -> None:
    """The same search at 5 hits and at 10 showed a hit at 0.91, then 0.72: each figure was scaled by the best
    cosine among the hits listed, and another workspace's eighth hit had the best. The scale is the best
    candidate's, listed or not."""
    ours, theirs = [0.6, 0.5, 0.45, 0.4, 0.35], [0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.3, 0.9, 0.2, 0.2]
    five = scope._merged_hits({"notes": both(ours, 0.6), "rfcs": both(theirs[:5], 0.9)}, 10)
    ten = scope._merged_hits({"notes": both(ours, 0.6), "rfcs": both(theirs, 0.9)}, 20)
    first = [hit.relevance for hit in five if hit.workspace == "notes"]
    assert first == [hit.relevance for hit in ten if hit.workspace == "notes"] and first[0] < 1.0


def test_a_workspace_of_a_few_sections_is_not_taken_to_be_about_the_query_s_words() -> None:
    """The bundled knowledge base (28 sections) holding a word in most of them beside a workspace of 20,000 holding
    it in 400: the small one's share is drawn towards the two's together (0.8 -> 0.19), and the large one's hits
    keep about half their figure by words alone, where the shares as measured left them a third."""
    small, large = listed(6.0), listed(6.0)
    for answer, share, sections in ((small, 0.8, 28), (large, 0.02, 20_000)):
        answer.report.query_info.lexical_prevalence, answer.report.query_info.lexical_sections = share, sections
    merged = scope._merged_hits({"small": small, "large": large}, 2)
    shrunk = scope._shrunk({"small": (0.8, 28), "large": (0.02, 20_000)})
    assert 0.19 < shrunk["small"] < 0.2 and (0.02 / 0.8) ** scope.PREVALENCE_POWER_WORDS < 0.34
    assert [hit.workspace for hit in merged] == ["small", "large"]
    assert merged[1].relevance == round((shrunk["large"] / shrunk["small"]) ** scope.PREVALENCE_POWER_WORDS, 4) > 0.5


def test_a_workspace_s_first_hits_stand_for_its_best_match_below_them() -> None:
    """A workspace's fusion put a weakly matching hit above its strongest (it weighs more than the words): the
    list keeps that order, and both stand for the strongest match, before another workspace's middling hits
    (capped by the hit above, the strong one went under them: 0.0321 against 0.0087 lost on the tuning pools)."""
    answers = {"notes": listed(2.0, 9.0), "rfcs": listed(5.0, 4.0)}
    merged = scope._merged_hits(answers, 4)
    assert [(hit.workspace, hit.path) for hit in merged] == [("notes", "0.md"), ("notes", "1.md"),
                                                             ("rfcs", "0.md"), ("rfcs", "1.md")]
    assert [hit.relevance for hit in merged] == [1.0, 1.0, 0.5556, 0.4444]
    capped = scope._merged_hits(answers, 4, capped_from_above=True)
    assert [(hit.workspace, hit.path) for hit in capped][:2] == [("rfcs", "0.md"), ("rfcs", "1.md")]
