"""`agent.tool`: the MCP tools' answers from an engine that is open already (the editor's agents use it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from autodoc_core.service.engine import Engine
from autodoc_core.surface.mcp import Tools
from autodoc_core.surface.rpc import call


class Handle:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self) -> Engine:
        return self.engine

    def file_changed(self) -> None:
        pass


def test_agent_tool_answers_as_the_mcp_search_does(engine: Engine, notes: Path, indexed: Callable[..., dict]) -> None:
    indexed()
    args = {"query": "why did we pick an embedded relational store", "max_tokens": 50}
    answer = call(engine, "agent.tool", ["search", args])
    mcp_result, mcp_text = Tools(Handle(engine), allow_index=False).run("search", args)
    assert answer["is_error"] is False
    assert answer["text"] == mcp_text and answer["result"] == mcp_result  # one text budget, not two
    assert answer["result"]["hits"][0]["path"] == "adr/0002.md"
    assert "adr/0002.md:3-5" in answer["text"]


def test_agent_tool_searches_every_workspace_without_one(engine: Engine, notes: Path, indexed: Callable[..., dict],
                                                          tmp_path: Path) -> None:
    """Issue 49: the editor's agents, as the MCP tools: no workspace means every workspace, each hit names its own,
    and read takes it."""
    from tests.conftest import write

    indexed()
    other = tmp_path / "other"
    write(other, "store.md", "# Store\n\nAn embedded relational store keeps the other team's notes.\n")
    engine.workspace_add("other", str(other))
    engine.workspace_index("other")
    answer = call(engine, "agent.tool", ["search", {"query": "embedded relational store"}])
    assert answer["is_error"] is False and answer["result"]["workspaces"] == ["kb", "other"]
    found = {(hit["workspace"], hit["path"]) for hit in answer["result"]["hits"]}
    assert {("kb", "adr/0002.md"), ("other", "store.md")} <= found
    assert "other: store.md:" in answer["text"] and "kb: adr/0002.md:" in answer["text"]
    read = call(engine, "agent.tool", ["read", {"path": "store.md", "workspace": "other"}])
    assert "other team's notes" in read["result"]["text"]
    narrowed = call(engine, "agent.tool", ["search", {"query": "embedded relational store", "workspace": ["kb"]}])
    assert {hit["workspace"] for hit in narrowed["result"]["hits"]} == {"kb"}


def test_agent_tool_failures_are_answers_the_model_reads(engine: Engine, notes: Path,
                                                         indexed: Callable[..., dict]) -> None:
    indexed()
    for name, args, expected in (("related", {"path": "adr/none.md"}, "related failed"),
                                 ("search", {"query": "x", "workspace": "nope"}, "search failed"),
                                 ("search", {"query": "x", "limit": 0}, "'limit' must be an integer"),
                                 ("index", {}, "unknown tool 'index'")):
        answer = call(engine, "agent.tool", [name, args])
        assert answer["is_error"] is True and expected in answer["text"], answer["text"]
        assert answer["error"]["fix"] in answer["text"]


def test_a_failure_is_worded_for_the_tools_the_agent_has_and_reads_as_over_mcp(engine: Engine, notes: Path,
                                                                              indexed: Callable[..., dict]) -> None:
    """The fix for a wrong workspace said "call the workspaces tool" to agents that had none; it names the tool by
    the agent's own name, or, without it, the workspace enum. One text for MCP and agent.tool."""
    from autodoc_core.errors import AutodocError
    from autodoc_core.surface.mcp import error_result

    indexed()
    wrong = {"query": "x", "workspace": "nope"}
    full = call(engine, "agent.tool", ["search", wrong])
    assert "Call the autodoc_workspaces tool for the names" in full["text"]
    narrow = call(engine, "agent.tool", ["search", wrong, {"tools": {"search": "autodoc_search"}}])
    assert "workspaces tool" not in narrow["text"] and "workspace argument's list of values" in narrow["text"]
    missing = call(engine, "agent.tool", ["read", {"path": "adr/none.md", "workspace": "kb"},
                                          {"tools": {"read": "autodoc_read", "search": "autodoc_search"}}])
    assert "Call autodoc_search to find the file's path" in missing["text"]
    try:
        engine.search_query("nope", "x")
    except AutodocError as exc:
        over_mcp = error_result("search", exc).content[0].text
    assert over_mcp == call(engine, "agent.tool", ["search", wrong, {"tools": {"workspaces": "workspaces"}}])["text"]
    assert "Call the workspaces tool for the names" in over_mcp


def test_arguments_are_checked_against_the_tools_own_schema(engine: Engine, notes: Path,
                                                            indexed: Callable[..., dict]) -> None:
    """Each argument is checked against the schema the agent reads (jsonschema), in the engine's wording; `paths`
    given as one string was taken and searched nothing (0 hits, no error), and 5.0 is no integer."""
    indexed()
    for name, args, words in (
            ("search", {"query": "store", "paths": "adr"}, "'paths' must be a list of strings, got 'adr'"),
            ("search", {"query": "store", "limit": 5.0}, "'limit' must be an integer from 1 to 50, got 5.0"),
            ("search", {"query": "store", "stages": ["lexcal"]}, "'stages' must be a list drawn from lexical, "
                                                                 "semantic, rerank"),
            ("search", {"query": "store", "workspace": []}, "'workspace' must be a string or a non-empty list of "
                                                            "strings, got []"),
            ("related", {"path": "adr/0002.md", "line": 0}, "'line' must be an integer, 1 or more, got 0"),
            ("search", {"query": "store", "colour": "red"}, "unknown argument 'colour' for search; it takes query"),
            ("read", {"workspace": "kb"}, "'path' is required: relative to the workspace root"),
            ("documents", {"query": 3}, "'query' must be a string, got 3")):
        answer = call(engine, "agent.tool", [name, args])
        assert answer["is_error"] and answer["error"]["code"] == -32602, (args, answer["text"])
        assert words in answer["text"], (words, answer["text"])
    given = call(engine, "agent.tool", ["search", {"query": "store", "paths": ["adr"], "limit": None}])
    assert not given["is_error"] and {hit["path"] for hit in given["result"]["hits"]} == {"adr/0002.md"}


def test_a_search_while_the_vectors_fill_says_how_far_semantic_reaches(engine: Engine, kb: Path) -> None:
    """While the embedder holds the filler's second batch the semantic stage covers part of the sections: the
    tool's text (the MCP search's own) says so first, with the counts and what to do; once full, it does not."""
    from tests.conftest import wait_until, write
    from tests.model_servers import Behaviour, model_server

    for i in range(6):
        write(kb, f"n{i}.md", f"# Note {i}\n\nFlour, water, salt and yeast make bread number {i}.\n")
    write(kb, "a.md", "# Storage\n\nWe keep the index in an embedded relational database.\n")
    args = {"query": "relational database"}
    with model_server("tei", Behaviour(hold_after=1)) as server:
        engine.workspace_add("kb", str(kb))
        engine.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url, "batch_size": 2,
                                                       "timeout": 120}, "semantic_deadline": 60})
        engine.workspace_index("kb")
        engine.start_background()
        assert server.behaviour.holding.wait(timeout=60)  # two of seven sections have vectors
        answer = call(engine, "agent.tool", ["search", args])
        assert answer["result"]["semantic"] == "partial"
        assert answer["result"]["embedding"] == {"embedded": 2, "total": 7}
        assert answer["text"].splitlines()[0] == (
            "Semantic search covers 2 of 7 sections so far (embedding is still filling): a paraphrase may miss "
            "sections; try again later or search by words.")
        assert answer["text"] == Tools(Handle(engine), allow_index=False).run("search", args)[1]
        # of several workspaces, the line names the one filling (one with no model made the answer "off", and no
        # line said the fill); paused, it says so (the walk: "still filling" while nothing filled)
        write(kb.parent / "words", "w.md", "# Words\n\nA relational database of words alone.\n")
        engine.workspace_add("words", str(kb.parent / "words"))
        engine.workspace_configure("words", {"embedder": "none"})
        engine.workspace_index("words")
        engine.embedding_pause()
        both = call(engine, "agent.tool", ["search", args])
        assert both["result"]["embedding"] == {"embedded": 2, "total": 7, "workspaces": ["kb"], "paused": True}
        assert both["text"].splitlines()[0].startswith(
            "Semantic search covers 2 of 7 sections of kb so far (embedding is paused: embedding.resume fills on)")
        engine.embedding_resume()
        engine.workspace_remove("words")
        server.behaviour.release.set()
        wait_until(lambda: engine.workspace_status("kb")["semantic"] == "ready", what="the vectors to fill")
        answer = call(engine, "agent.tool", ["search", args])
    assert answer["result"]["semantic"] == "ready" and "embedding" not in answer["result"]
    assert "Semantic search covers" not in answer["text"]


def test_the_fill_line_says_which_workspaces_fill_and_which_switch_models() -> None:
    """A review: the line chose its words from the answer's least ready state, so a workspace switching models
    beside one with no model read as "covers N sections (still filling)" while its search by meaning was off."""
    from autodoc_core.surface.mcp_text import filling_line

    def line(embedding: dict, semantic: str = "off") -> str:
        return filling_line({"embedding": embedding, "semantic": semantic})[0]

    alone = line({"embedded": 2, "total": 7, "switching": ["kb"]}, "switching")
    assert alone.startswith("Semantic search is off while a new embedding model fills (2 of 7 sections so far)")
    beside_off = line({"embedded": 2, "total": 7, "workspaces": ["kb"], "switching": ["kb"]})
    assert beside_off.startswith("Semantic search is off while a new embedding model fills (2 of 7 sections of kb")
    mixed = line({"embedded": 5, "total": 20, "workspaces": ["kb", "rfcs"], "switching": ["kb"]}, "switching")
    assert mixed.startswith("Semantic search covers 5 of 20 sections of kb, rfcs so far (embedding is still filling)"
                            "; it is off in kb while a new embedding model fills there"), mixed
