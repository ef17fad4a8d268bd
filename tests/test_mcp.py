"""`autodoc mcp`, run as a real subprocess and spoken to with the MCP SDK's own stdio client."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from autodoc_core.service.engine import Engine
from autodoc_core.store.lease import WriterLease
from autodoc_core.surface.mcp import ERROR_META
from autodoc_core.surface.mcp_answer import BY_MEANING_ONLY
from tests.conftest import PROJECT, wait_until, wait_until_async, write
from tests.mcp_corpus import NETWORK, NOTES, file_lines, setup_workspace


@pytest.fixture
def notes(kb: Path) -> Path:
    write(kb, "storage.md", NOTES)
    write(kb, "net/network.md", NETWORK)
    return kb


@asynccontextmanager
async def mcp_session(db: Path, log: Path, *options: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, cwd=PROJECT,
                                   args=["-m", "autodoc_core", "--db", str(db), "mcp", *options])
    with open(log, "a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, send), ClientSession(read, send) as session:
            await session.initialize()
            yield session


def talk(db: Path, log: Path, scenario: Callable[[ClientSession], Awaitable[None]], *options: str) -> None:
    async def run() -> None:
        with anyio.fail_after(60):
            async with mcp_session(db, log, *options) as session:
                await scenario(session)

    anyio.run(run)


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    return await session.call_tool(tool, arguments)


def test_lists_the_tools_with_input_and_output_schemas(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)

    async def scenario(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert sorted(tools) == ["documents", "read", "related", "search", "workspaces"]
        for tool in tools.values():
            assert tool.input_schema["type"] == "object" and tool.output_schema["type"] == "object"
            assert tool.annotations.read_only_hint is True
            assert len(tool.description) > 80
        limit = tools["search"].input_schema["properties"]["limit"]
        assert (limit["default"], limit["minimum"], limit["maximum"]) == (5, 1, 50)
        assert tools["search"].input_schema["required"] == ["query"]
        assert "hits" in tools["search"].output_schema["properties"]
        assert "tag:" in tools["search"].description and "prefix*" in tools["search"].description
        with pytest.raises(MCPError, match="--allow-index"):
            await call(session, "index", {})

    talk(db, tmp_path / "server.log", scenario)

    async def with_index(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert tools["index"].annotations.read_only_hint is False
        write(notes, "later.md", "# Later\n\nA gecko note written after the first index.\n")
        report = await call(session, "index", {"workspace": "kb"})
        assert not report.is_error and report.structured_content["added"] == 1
        answer = await call(session, "search", {"query": "written after"})
        assert answer.structured_content["hits"][0]["path"] == "later.md"
        listed = await call(session, "index", {"paths": ["later.md", "nope.md", str(notes / "later.md"),
                                                         "../later.md", ".hidden/x.md"]})
        # The absolute path inside the root is later.md; the others are not indexed, each with why.
        assert listed.structured_content["unchanged"] == 1
        assert [item["path"] for item in listed.structured_content["not_indexed"]] == [
            "nope.md", "../later.md", ".hidden/x.md"]
        reasons = [item["reason"] for item in listed.structured_content["not_indexed"]]
        assert reasons == ["no such file", "not a path relative to the workspace root", "no such file"]
        assert "Not indexed: nope.md: no such file." in listed.content[0].text

    # No scan: the round at start, run after later.md is written, indexed it first ("added" == 0, once).
    talk(db, tmp_path / "server.log", with_index, "--allow-index", "--scan-seconds", "0")


def test_search_hits_carry_the_section_text_of_their_line_span(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)

    async def scenario(session: ClientSession) -> None:
        result = await call(session, "search", {"query": "gecko"})  # no workspace: there is only one
        assert not result.is_error
        answer = result.structured_content
        assert answer["workspace"] == "kb" and answer["semantic"] == "off"
        assert answer["stages"]["performed"] == ["lexical"]
        assert "no embedding model" in answer["stages"]["skipped"]["semantic"]
        assert not answer["trimmed"] and len(answer["hits"]) == 3
        for hit in answer["hits"]:
            assert hit["text"] == file_lines(notes / hit["path"], hit["line_start"], hit["line_end"])
            assert hit["text_complete"] and hit["via"] == ["lexical"] and 0 < hit["relevance"] <= 1
        wal = next(h for h in answer["hits"] if h["breadcrumb"] == "Storage › Write-ahead log")
        assert (wal["line_start"], wal["line_end"]) == (9, 12)
        assert wal["text"].startswith("## Write-ahead log\n\nThe write-ahead log lets readers")
        text = result.content[0].text
        assert "storage.md:9-12 · Storage › Write-ahead log" in text and "geckos never wait." in text
        assert "semantic skipped: no embedding model" in text

        narrowed = await call(session, "search", {"query": "gecko", "paths": ["net"], "limit": 1})
        assert [h["path"] for h in narrowed.structured_content["hits"]] == ["net/network.md"]
        assert narrowed.structured_content["notes"] == []
        nowhere = await call(session, "search", {"query": "gecko", "paths": ["docs/net"]})
        assert nowhere.structured_content["hits"] == []
        assert "'docs/net' names no indexed file or folder" in nowhere.structured_content["notes"][0]
        assert "Note: paths: 'docs/net' names no indexed file or folder" in nowhere.content[0].text
        tagged = await call(session, "search", {"query": "tag:storage"})
        assert {h["path"] for h in tagged.structured_content["hits"]} == {"storage.md"}
        # A listing of documents gives their paths, not their text (frontmatter first) until the budget is spent.
        assert [(h["kind"], h["text"]) for h in tagged.structured_content["hits"]] == [("document", "")]
        assert "(a listed document: read lines 1-" in tagged.content[0].text
        bare = await call(session, "search", {"query": "gecko", "max_tokens": 0})  # no text asked for, none cut
        assert all(h["text"] == "" for h in bare.structured_content["hits"])
        assert "(no text" not in bare.content[0].text and "trimmed" not in bare.content[0].text
        long = "gecko " * 4000
        echoed = await call(session, "search", {"query": long})
        assert len(echoed.structured_content["query"]) == 300 and len(echoed.content[0].text) < 5000

    talk(db, tmp_path / "server.log", scenario)


def test_a_file_edited_since_indexing_says_its_lines_may_be_off(tmp_path: Path, notes: Path) -> None:
    """An agent edits a note and nothing re-indexes it yet (a server started with --scan-seconds 0, Neovim
    closed): a hit's stored line span now reads other lines. They were given as the section, complete."""
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)
    storage = notes / "storage.md"
    storage.write_text("# Moved down\n\nthree new lines\n\n" + storage.read_text(encoding="utf-8"), encoding="utf-8")

    async def scenario(session: ClientSession) -> None:
        answer = (await call(session, "search", {"query": "gecko"})).structured_content
        stale = [h for h in answer["hits"] if h["path"] == "storage.md"]
        fresh = [h for h in answer["hits"] if h["path"] == "net/network.md"]
        assert stale and fresh
        assert all("changed since it was indexed" in h["text_problem"] for h in stale)
        assert all("text_problem" not in h for h in fresh)
        assert "(the file changed since it was indexed" in (await call(session, "search", {"query": "gecko"})
                                                             ).content[0].text
        bare = await call(session, "search", {"query": "gecko", "max_tokens": 0})  # said with no text too
        assert "(the file changed since it was indexed" in bare.content[0].text
        read = await call(session, "read", {"path": "storage.md"})
        assert read.structured_content["changed_since_indexed"] is True
        assert "changed since it was indexed" in read.content[0].text
        unchanged = await call(session, "read", {"path": "net/network.md"})
        assert unchanged.structured_content["changed_since_indexed"] is False

    talk(db, tmp_path / "server.log", scenario, "--scan-seconds", "0")


def test_the_server_re_indexes_a_file_edited_on_disk(tmp_path: Path, notes: Path) -> None:
    """With only the MCP server running (no editor), an edit on disk stayed unsearchable and its hits' lines
    stale until someone ran an index. A search that meets a changed file has the server re-index at once."""
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)
    storage = notes / "storage.md"

    async def scenario(session: ClientSession) -> None:
        assert (await call(session, "search", {"query": "gecko"})).structured_content["hits"]
        storage.write_text("# Moved down\n\nzorblax lines\n\n" + storage.read_text(encoding="utf-8"),
                           encoding="utf-8")
        await call(session, "search", {"query": "gecko"})  # meets the changed file: the scan starts now
        async def edit_found() -> list:
            return (await call(session, "search", {"query": "zorblax"})).structured_content["hits"]

        # The interval is an hour: only the wake can re-index it in time.
        found = await wait_until_async(edit_found, 50, what="the edit indexed")
        assert found[0]["path"] == "storage.md" and found[0]["line_start"] == 1
        assert found[0]["text"].startswith("# Moved down") and "text_problem" not in found[0]

    talk(db, tmp_path / "server.log", scenario, "--scan-seconds", "3600")


def test_reading_past_a_line_longer_than_the_budget_makes_progress(tmp_path: Path, notes: Path) -> None:
    """A 40,000-character line (an inlined image) is over the default 8,000-token read budget: read gave
    no text and next_line pointing at that same line, so an agent paging on asked for it forever. Now the
    line's start fills the budget, is marked cut, and next_line moves past it."""
    image = "data:image/png;base64," + "iVBORw0KGgo" * 3640
    write(notes, "figure.md", f"# Figure\n\n![chart]({image})\n\nThe caption says geckos.\n")
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)

    async def scenario(session: ClientSession) -> None:
        first = (await call(session, "read", {"path": "figure.md"})).structured_content
        assert (first["line_end"], first["next_line"], first["line_cut"]) == (2, 3, False)  # whole lines first
        answer = await call(session, "read", {"path": "figure.md", "line_start": first["next_line"]})
        long = answer.structured_content
        assert (long["line_end"], long["next_line"], long["trimmed"], long["line_cut"]) == (3, 4, True, True)
        assert long["text"].startswith("![chart](data:image/png;base64,iVBOR") and long["text"].endswith(" …")
        assert len(long["text"]) < len(image)
        assert "only its start is given; continue with line_start 4" in answer.content[0].text
        rest = (await call(session, "read", {"path": "figure.md", "line_start": long["next_line"]}))
        assert rest.structured_content["text"] == "\nThe caption says geckos."
        assert not rest.structured_content["trimmed"] and not rest.structured_content["line_cut"]

    talk(db, tmp_path / "server.log", scenario)


def test_read_documents_and_workspaces(tmp_path: Path, notes: Path) -> None:
    write(notes, "_schema/frontmatter.yaml", "common: {status: string}\ntypes:\n  adr: {number: integer}\n")
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)

    async def scenario(session: ClientSession) -> None:
        part = (await call(session, "read", {"path": "storage.md", "line_start": 9, "line_end": 12})).structured_content
        assert part["text"] == file_lines(notes / "storage.md", 9, 12)
        assert (part["line_start"], part["line_end"], part["trimmed"], part["next_line"]) == (9, 12, False, None)
        cut = (await call(session, "read", {"path": "storage.md", "max_tokens": 10})).structured_content
        assert cut["trimmed"] and cut["next_line"] == cut["line_end"] + 1
        assert cut["text"] == file_lines(notes / "storage.md", 1, cut["line_end"])
        found = (await call(session, "documents", {"query": "storage"})).structured_content
        assert [d["path"] for d in found["documents"]] == ["storage.md"] and found["next_offset"] is None
        first = await call(session, "documents", {"limit": 1})  # a page, and where the next one starts
        assert [d["path"] for d in first.structured_content["documents"]] == ["net/network.md"]
        assert first.structured_content["next_offset"] == 1 and "call again with offset 1" in first.content[0].text
        rest = (await call(session, "documents", {"limit": 1, "offset": 1})).structured_content
        assert [d["path"] for d in rest["documents"]] == ["storage.md"] and rest["next_offset"] is None
        spaces = (await call(session, "workspaces", {})).structured_content["workspaces"]
        assert [(w["name"], w["root"], w["documents"], w["semantic"]) for w in spaces] == [("kb", str(notes), 2, "off")]
        assert spaces[0]["chunks"] == status["chunks"] and spaces[0]["embedding"] is None
        assert spaces[0]["facets"] == {"tag": "list", "status": "string", "type": "string",
                                       "number": "integer (type adr)"}
        listed = (await call(session, "workspaces", {})).content[0].text
        assert "filter fields (field:value, -field:value in a query): tag (list), status (string)" in listed

    with Engine(db) as engine:
        status = engine.workspace_status("kb")
    talk(db, tmp_path / "server.log", scenario)


def test_bad_input_is_a_tool_error_with_the_engine_code(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)
    write(tmp_path, "outside.md", "# Outside\n")
    bad_calls = [
        ("search", {"query": "gecko", "workspace": "nope"}, -32060, "workspaces tool"),
        ("search", {"query": "gecko", "workspace": "KB"}, -32060,
         "no workspace named 'KB' (did you mean 'kb'? this database has kb)"),
        ("search", {"query": "gecko", "facets": {"owner": "ops"}}, -32602, "is not in any document's frontmatter"),
        ("search", {"query": "gecko", "limit": 51}, -32602, "from 1 to 50"),
        ("search", {"query": "gecko", "limit": 0}, -32602, "from 1 to 50"),
        ("search", {"query": "gecko", "limit": "five"}, -32602, "'limit' must be an integer"),
        ("search", {"query": "gecko", "stages": ["rerank"]}, -32602, "lexical or semantic"),
        ("search", {"query": "gecko", "colour": "red"}, -32602, "unknown argument 'colour'"),
        ("search", {}, -32602, "'query' is required"),
        ("read", {"path": "../outside.md"}, -32061, "relative to the workspace root"),
        ("read", {"path": str(tmp_path / "outside.md")}, -32061, "relative to the workspace root"),
        ("read", {"path": "missing.md"}, -32062, "documents"),
        ("read", {"path": "storage.md", "line_start": 5, "line_end": 2}, -32602, "line_end"),
        ("read", {"path": "storage.md", "max_tokens": 0}, -32602, "from 1 to 200000, got 0"),  # paging on it looped
        ("documents", {"limit": 1000}, -32602, "from 1 to 200"),
    ]

    async def scenario(session: ClientSession) -> None:
        for tool, arguments, code, words in bad_calls:
            result = await call(session, tool, arguments)
            assert result.is_error, (tool, arguments)
            assert result.structured_content is None  # an error is no answer to check against the output schema
            assert result.meta[ERROR_META]["code"] == code, (tool, arguments, result.meta)
            assert words in result.content[0].text, (words, result.content[0].text)
        absolute = await call(session, "read", {"path": str(notes / "net" / "network.md")})  # inside the root
        assert absolute.structured_content["path"] == "net/network.md"
        still = await call(session, "search", {"query": "gecko"})  # the server kept serving
        assert not still.is_error and still.structured_content["hits"]

    talk(db, tmp_path / "server.log", scenario)


def test_related_gives_the_sections_around_a_file_with_their_text(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)

    async def scenario(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert tools["related"].input_schema["required"] == ["path"]
        assert "line" in tools["related"].input_schema["properties"]
        answer = await call(session, "related", {"path": "storage.md", "line": 7})
        assert not answer.is_error
        found = answer.structured_content
        assert found["section"]["breadcrumb"] == "Storage" and found["path"] == "storage.md"
        hit = found["hits"][0]
        assert hit["path"] == "net/network.md" and "lexical" in hit["via"]
        assert hit["text"] == file_lines(notes / "net" / "network.md", hit["line_start"], hit["line_end"])
        assert "storage.md" not in [h["path"] for h in found["hits"]]
        assert "for 'related to storage.md › Storage'" in answer.content[0].text
        assert found["stages"]["skipped"]["semantic"] == "no embedding model is configured for this workspace"
        bare = await call(session, "related", {"path": str(notes / "storage.md"), "max_tokens": 0})
        assert bare.structured_content["section"] is None and bare.structured_content["hits"][0]["text"] == ""
        for arguments, code, words in [({"path": "missing.md"}, -32062, "does not exist"),
                                       ({"path": "storage.md", "line": 99}, -32602, "past the end"),
                                       ({"path": "../storage.md"}, -32061, "outside"),
                                       ({"path": "storage.md", "line": "7"}, -32602, "'line'")]:
            failed = await call(session, "related", arguments)
            assert failed.is_error and failed.meta[ERROR_META]["code"] == code, (arguments, failed.meta)
            assert words in failed.content[0].text

    talk(db, tmp_path / "server.log", scenario)


def test_an_empty_database_names_itself(tmp_path: Path) -> None:
    """The likely cause is a client config whose --db is not the database Neovim uses: say which file."""
    db = tmp_path / "wrong.db"

    async def scenario(session: ClientSession) -> None:
        result = await call(session, "search", {"query": "gecko"})
        assert result.is_error and result.meta[ERROR_META]["code"] == -32060
        assert f"no workspace is registered in {db} yet" in result.content[0].text
        listed = (await call(session, "workspaces", {})).content[0].text
        assert "autodoc --call workspace.add" in listed and "Call the workspaces tool" not in listed

    talk(db, tmp_path / "server.log", scenario)


def test_a_database_in_a_folder_that_does_not_exist_is_a_tool_error_naming_the_folder(tmp_path: Path) -> None:
    """A client config with a mistyped --db created the folders and served an empty database."""
    db = tmp_path / "nonexistent" / "dir" / "x.db"

    async def scenario(session: ClientSession) -> None:
        result = await call(session, "search", {"query": "gecko"})
        assert result.is_error and result.meta[ERROR_META]["code"] == -32064
        assert f"the folder {db.parent} of the database {db} does not exist" in result.content[0].text

    talk(db, tmp_path / "server.log", scenario)
    assert not (tmp_path / "nonexistent").exists()
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def test_a_root_not_there_is_said_by_the_workspaces_tool(tmp_path: Path, notes: Path) -> None:
    """A drive not mounted: every hit's text failed ("does not exist") and the workspaces tool still said
    two documents, with nothing about the missing root."""
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)
    notes.rename(tmp_path / "away")

    async def scenario(session: ClientSession) -> None:
        answer = await call(session, "workspaces", {})
        assert answer.structured_content["workspaces"][0]["root_missing"] is True
        assert "the root folder is not there (a drive not mounted?)" in answer.content[0].text
        assert (await call(session, "search", {"query": "gecko"})).structured_content["hits"]  # nothing lost

    try:
        talk(db, tmp_path / "server.log", scenario)
    finally:
        (tmp_path / "away").rename(notes)


def test_a_workspace_not_indexed_yet_says_so(tmp_path: Path, notes: Path) -> None:
    """It said "semantic ready (0 of 0 sections embedded)", and a search's semantic stage that no document
    was fully embedded yet."""
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes, embedder="local", index=False)

    async def scenario(session: ClientSession) -> None:
        assert "· not indexed yet" in (await call(session, "workspaces", {})).content[0].text
        answer = (await call(session, "search", {"query": "gecko"})).structured_content
        assert answer["stages"]["skipped"]["semantic"].startswith("the workspace has no indexed sections")

    talk(db, tmp_path / "server.log", scenario, "--scan-seconds", "0")  # a scan would index it


def test_without_a_workspace_search_and_related_cover_every_workspace(tmp_path: Path, notes: Path) -> None:
    """Issue 49: search and related without `workspace` search every workspace (they asked for a name before);
    each hit names its workspace in the text and the structured result, and read takes it."""
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes, embedder="local")
    other = tmp_path / "other"
    write(other, "x.md", "# X\n\nThe gecko elsewhere: geckos climb glass with their toe pads.\n")
    setup_workspace(db, "other", other)

    async def scenario(session: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert "every workspace" in tools["search"].description and "every workspace" in tools["related"].description
        result = await call(session, "search", {"query": "gecko"})
        answer = result.structured_content
        assert not result.is_error and answer["workspace"] == "*" and answer["workspaces"] == ["kb", "other"]
        found = {(hit["workspace"], hit["path"]) for hit in answer["hits"]}
        assert ("other", "x.md") in found and any(ws == "kb" for ws, _ in found)
        text = result.content[0].text
        assert "in workspaces kb, other" in text and "other: x.md:" in text
        # each workspace's state, where the least ready alone said "off" though kb searched by meaning
        states = answer["semantic_by_workspace"]
        assert states["other"] == "off" and states["kb"] in ("partial", "ready") and answer["semantic"] == "off"
        assert f"Semantic index: {states['kb']} in kb; off in other." in text, text
        hit = next(hit for hit in answer["hits"] if hit["workspace"] == "other")
        assert "toe pads" in hit["text"]
        read = await call(session, "read", {"path": hit["path"], "workspace": hit["workspace"]})
        assert "toe pads" in read.structured_content["text"]
        listed = await call(session, "search", {"query": "gecko", "workspace": ["other", "other"]})
        assert {h["workspace"] for h in listed.structured_content["hits"]} == {"other"}
        named = await call(session, "search", {"query": "gecko", "workspace": "other"})
        assert [h["path"] for h in named.structured_content["hits"]] == ["x.md"]
        assert named.structured_content["workspace"] == "other"
        unknown = await call(session, "search", {"query": "gecko", "workspace": ["kb", "nope"]})
        assert unknown.is_error and unknown.meta[ERROR_META]["code"] == -32060
        assert "'nope'" in unknown.content[0].text and "kb, other" in unknown.content[0].text
        related = await call(session, "related", {"path": "x.md"})
        assert not related.is_error and related.structured_content["source_workspace"] == "other"
        assert all(h["workspace"] in ("kb", "other") for h in related.structured_content["hits"])

    talk(db, tmp_path / "server.log", scenario)


def test_texts_are_trimmed_to_the_token_budget_at_line_ends(tmp_path: Path, kb: Path) -> None:
    lines = [f"Line {n}: the gecko report continues with a sentence of filler text." for n in range(1, 25)]
    write(kb, "long.md", "# Long report\n\n" + "\n".join(lines) + "\n")
    write(kb, "short.md", "# Short\n\nOne gecko line.\n")
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", kb)

    async def scenario(session: ClientSession) -> None:
        full = (await call(session, "search", {"query": "gecko"})).structured_content
        assert not full["trimmed"] and all(hit["text_complete"] for hit in full["hits"])
        result = await call(session, "search", {"query": "gecko", "max_tokens": 60})
        answer = result.structured_content
        assert answer["trimmed"] and answer["max_tokens"] == 60 and 0 < answer["text_tokens"] <= 60
        cut = [hit for hit in answer["hits"] if not hit["text_complete"]]
        assert cut
        for hit in answer["hits"]:
            # Whatever was kept is whole lines from the start of the section, nothing more.
            assert hit["text"] == file_lines(kb / hit["path"], hit["line_start"], hit["text_line_end"])
            assert hit["line_start"] - 1 <= hit["text_line_end"] <= hit["line_end"]
        assert "trimmed to the 60-token budget" in result.content[0].text
        bare = (await call(session, "search", {"query": "gecko", "max_tokens": 0})).structured_content
        assert bare["trimmed"] and all(hit["text"] == "" for hit in bare["hits"])

    talk(db, tmp_path / "server.log", scenario)


def file_lines_of(text: str, first: int, last: int) -> str:
    return "\n".join(text.splitlines()[first - 1 : last])


def test_a_file_changed_since_indexing_gives_its_hit_a_text_problem(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)
    (notes / "net" / "network.md").unlink()
    write(notes, "storage.md", "\n".join(NOTES.splitlines()[:11]))  # ends inside the 9-12 section

    async def scenario(session: ClientSession) -> None:
        result = await call(session, "search", {"query": "gecko"})
        assert not result.is_error
        hits = {hit["breadcrumb"]: hit for hit in result.structured_content["hits"]}
        gone, short, whole = hits["Network › Transport"], hits["Storage › Write-ahead log"], hits["Storage"]
        # the deleted file's section as the index keeps it (it said "does not exist" with no text: the agent had a
        # hit it could not read), said to be the index's copy
        assert gone["text"] == file_lines_of(NETWORK, gone["line_start"], gone["line_end"])
        assert gone["text_complete"] and "the index's copy" in gone["text_problem"]  # reading it gives no more
        read = await call(session, "read", {"path": "net/network.md"})
        assert "is gone" in read.structured_content["text_source"]
        assert "is gone" in read.content[0].text.splitlines()[0]  # an agent given the text alone reads it too
        assert not short["text_complete"] and "shorter than when it was indexed" in short["text_problem"]
        assert short["text"] == file_lines(notes / "storage.md", 9, 11) and short["text_line_end"] == 11
        assert whole["text_complete"] and "changed since it was indexed" in whole["text_problem"]
        assert "(text incomplete: " in result.content[0].text

    talk(db, tmp_path / "server.log", scenario, "--scan-seconds", "0")  # a scan would index the changes


def generate_notes(root: Path, files: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for number in range(files):
        sections = "\n".join(f"## Part {part}\n\nfiller about topic{number % 97} and part{part} of note {number}.\n"
                             for part in range(5))
        (root / f"note{number:05}.md").write_text(f"# Note {number}\n\n{sections}", encoding="utf-8")


def wait_for_lease_holder(db: Path, pid: int, process: subprocess.Popen) -> None:
    lease = WriterLease(db)
    try:
        def holding() -> bool:
            assert process.poll() is None, "the indexer ended before it was seen holding the lease"
            return (lease.holder() or {}).get("pid") == pid

        wait_until(holding, every=0.005, what="the indexer holding the writer lease")
    finally:
        lease.close()


def test_search_answers_while_another_process_indexes(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)
    big = tmp_path / "big"
    generate_notes(big, 2000)
    setup_workspace(db, "big", big, index=False)
    indexer = subprocess.Popen(
        [sys.executable, "-m", "autodoc_core", "--db", str(db), "--call", "workspace.index", '["big"]'],
        cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )

    async def scenario(session: ClientSession) -> None:
        await anyio.to_thread.run_sync(wait_for_lease_holder, db, indexer.pid, indexer)
        # Frozen mid-run, holding the writer lease (and perhaps an open write transaction): whatever
        # the machine's speed, the searches below happen during the indexing.
        os.kill(indexer.pid, signal.SIGSTOP)
        try:
            small = await call(session, "search", {"query": "gecko", "workspace": "kb"})
            during = await call(session, "search", {"query": "filler", "workspace": "big"})
        finally:
            os.kill(indexer.pid, signal.SIGCONT)
        assert not small.is_error and len(small.structured_content["hits"]) == 3
        assert not during.is_error and during.structured_content["stages"]["performed"] == ["lexical"]
        spaces = await call(session, "workspaces", {})
        assert not spaces.is_error and indexer.poll() is None  # all answered while the indexer was at work
        await anyio.to_thread.run_sync(lambda: indexer.wait(timeout=120))
        after = await call(session, "search", {"query": "topic5 part3", "workspace": "big", "limit": 50})
        assert {h["path"] for h in after.structured_content["hits"]} >= {"note00005.md", "note00102.md"}

    try:  # no scan: its round at start could take the lease first and index "big" itself (then "added" == 0)
        talk(db, tmp_path / "server.log", scenario, "--scan-seconds", "0")
    finally:
        if indexer.poll() is None:
            os.kill(indexer.pid, signal.SIGCONT)
            indexer.kill()
        indexer.wait(timeout=30)
    report = json.loads(indexer.stdout.read())
    assert report["added"] == 2000, report


def test_the_server_embeds_in_the_background_and_reports_progress(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes, embedder="local")

    async def scenario(session: ClientSession) -> None:
        first = (await call(session, "search", {"query": "geckos waiting for writers"})).structured_content
        assert first["semantic"] in ("partial", "ready")
        async def filled() -> list | None:
            spaces = (await call(session, "workspaces", {})).structured_content["workspaces"]
            return spaces if spaces[0]["semantic"] == "ready" else None

        spaces = await wait_until_async(filled, 90, what="the background embedder to finish")
        embedding = spaces[0]["embedding"]
        assert embedding["provider"] == "local" and embedding["embedded"] == embedding["total"] > 0
        answer = (await call(session, "search", {"query": "readers are not blocked by commits",
                                                 "stages": ["semantic"]})).structured_content
        assert answer["semantic"] == "ready" and answer["stages"]["performed"] == ["semantic"]
        assert answer["hits"][0]["breadcrumb"] == "Storage › Write-ahead log"
        # Words no section has: the semantic stage still returns its nearest sections, at a relevance that
        # looked like a find (0.67 on the techdocs for "quuxbar flibbertigibbet"); the answer says so.
        nonsense = await call(session, "search", {"query": "quuxbar flibbertigibbet"})
        assert nonsense.structured_content["hits"] and nonsense.structured_content["notes"] == [BY_MEANING_ONLY]
        assert "found by meaning alone" in nonsense.content[0].text
        found = (await call(session, "search", {"query": "geckos waiting for writers"})).structured_content
        assert BY_MEANING_ONLY not in found["notes"]

    talk(db, tmp_path / "server.log", scenario)


def test_stdout_carries_only_protocol_messages(tmp_path: Path, notes: Path) -> None:
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", "arguments": {"limit": 0}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "search",
                                                                       "arguments": {"query": "gecko"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nope", "arguments": {}}},
    ]
    process = subprocess.Popen([sys.executable, "-m", "autodoc_core", "--db", str(db), "mcp"], cwd=PROJECT,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    answers = {}
    try:
        for message in messages:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                answer = json.loads(process.stdout.readline())  # every line on stdout is one JSON-RPC message
                assert answer["jsonrpc"] == "2.0"
                answers[answer["id"]] = answer
    finally:
        process.stdin.close()
        rest = process.stdout.read()
        process.wait(timeout=30)
    assert rest == b""
    assert answers[3]["result"]["isError"] and answers[3]["result"]["_meta"]["autodoc/error"]["code"] == -32602
    assert "structuredContent" not in answers[3]["result"]
    assert answers[4]["result"]["structuredContent"]["hits"]
    assert answers[5]["error"]["code"] == -32602


def test_a_client_that_stops_reading_ends_the_server_quietly(tmp_path: Path, notes: Path) -> None:
    """A client gone while an answer was written left a 40-line ExceptionGroup traceback (BrokenPipeError) on
    stderr and exit status 1; the server now ends as `autodoc --call ... | true` does: nothing said, 141."""
    db = tmp_path / "a.db"
    setup_workspace(db, "kb", notes)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "1"}}}
    read_end, write_end = os.pipe()
    os.close(read_end)  # the client reads nothing more
    try:
        done = subprocess.run([sys.executable, "-m", "autodoc_core", "--db", str(db), "mcp"],
                              input=json.dumps(initialize).encode() + b"\n", stdout=write_end,
                              stderr=subprocess.PIPE, cwd=PROJECT, timeout=60)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, b"")


def test_a_search_budget_is_not_spent_on_one_long_line() -> None:
    """Only read cuts a line too long for what is left: in a search, a hit that opens with a line of
    base64 used to take the whole budget, leaving every later hit without text."""
    from autodoc_core.surface.mcp_answer import Budget

    search_budget = Budget(100)
    assert search_budget.take(["x" * 4000]) == [] and search_budget.trimmed
    assert search_budget.take(["a short section line"]) == ["a short section line"]
    read_budget = Budget(100, cut_long_lines=True)
    assert read_budget.take(["x" * 4000])[0].endswith(" …") and read_budget.line_cut and read_budget.left == 0
