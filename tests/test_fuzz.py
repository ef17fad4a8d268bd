"""Property tests: no query string and no file content may raise or hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodoc_core.errors import INTERNAL_ERROR, AutodocError
from autodoc_core.parse.document import parse_document
from autodoc_core.parse.frontmatter import FacetSchema
from autodoc_core.parse.symbols import chunk_symbols
from autodoc_core.retrieve.query import parse_query
from autodoc_core.retrieve.symbols import classify
from autodoc_core.service.engine import Engine
from tests.conftest import write

QUERY_ALPHABET = st.characters(codec="utf-8")
SYNTAX = st.sampled_from(['"', "*", "-", ":", "(", ")", "^", "AND", "OR", "NOT", "NEAR", "type:", "tag:", " ", "\\"])


@pytest.fixture(scope="module")
def fuzz_engine(tmp_path_factory) -> Engine:
    root = tmp_path_factory.mktemp("kb")
    write(root, "_schema/frontmatter.yaml", "common: {status: string, n: integer, d: date, b: boolean}\n")
    write(root, "a.md", "---\nstatus: ok\nn: 3\n---\n# Alpha\n\nNEAR AND OR words \"quoted\" (paren) ^caret\n")
    write(root, "b.md", "# Beta\n\nmore words here\n")
    engine = Engine(tmp_path_factory.mktemp("db") / "fuzz.db")
    engine.workspace_add("kb", str(root))
    engine.workspace_index("kb")
    return engine


LINES = {"a.md": 7, "b.md": 3}  # the fuzz workspace's documents and their line counts


def assert_well_formed(answer: dict) -> None:
    """Every hit is a real section of a real document, and the stage report adds up."""
    for hit in answer["hits"]:
        assert hit["path"] in LINES
        assert 1 <= hit["line_start"] <= hit["line_end"] <= LINES[hit["path"]]
        assert 0 <= hit["relevance"] <= 1
    stages = answer["stages"]
    # The identifier backstop runs unasked, and a facet-only query lists documents instead of searching.
    assert set(stages["performed"]) <= {*stages["requested"], "symbol", "facet"}
    assert set(stages["requested"]) <= {*stages["performed"], *stages["skipped"]}  # each ran, or says why not
    assert set(stages["skipped"]) <= set(stages["requested"]) - set(stages["performed"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(QUERY_ALPHABET, max_size=200))
def test_any_text_query_answers(fuzz_engine: Engine, text: str) -> None:
    assert_well_formed(fuzz_engine.search_query("kb", text, None).to_wire())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(SYNTAX, st.text(QUERY_ALPHABET, max_size=8)), max_size=20).map("".join))
def test_syntax_heavy_queries_answer(fuzz_engine: Engine, text: str) -> None:
    assert_well_formed(fuzz_engine.search_query("kb", text, None).to_wire())
    assert_well_formed(fuzz_engine.search_query("kb", f"beta {text}", None).to_wire())
    parse_query(text, FacetSchema())


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_parse_as_a_document(raw: bytes) -> None:
    doc = parse_document(raw, "x.md", FacetSchema(), 350)
    for chunk in doc.chunks:
        assert 0 <= chunk.byte_start <= chunk.byte_end <= len(raw)
        assert 1 <= chunk.line_start <= chunk.line_end


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["# h", "## h2", "---", "```", "| a |", "|---|", "- x", "> q", "", "text", "[[w]]",
                                 "#tag", "title: [x", "abstract: y", "\t", "<div>", "1. y"]), max_size=40))
def test_markdown_structures_keep_spans_in_bounds(lines: list[str]) -> None:
    raw = "\n".join(lines).encode()
    doc = parse_document(raw, "x.md", FacetSchema(), 16)
    for chunk in doc.chunks:
        assert raw[chunk.byte_start : chunk.byte_end].count(b"\n") == chunk.line_end - chunk.line_start


def test_pathological_documents(tmp_path: Path) -> None:
    many_headings = "".join(f"# H{i}\n\nx\n" for i in range(10_000)).encode()
    assert len(parse_document(many_headings, "x.md", FacetSchema(), 350).chunks) == 10_000
    deep = ("> " * 2000 + "deep\n").encode() + b"- " * 2000 + b"x\n"
    deep_doc = parse_document(deep, "x.md", FacetSchema(), 350)
    assert "deep" in " ".join(chunk.body for chunk in deep_doc.chunks)
    assert deep_doc.chunks[-1].line_end == 2
    long_line = b"# Long\n\n" + b"word " * 2_000_000 + b"\n"
    doc = parse_document(long_line, "x.md", FacetSchema(), 350)
    assert doc.chunks[-1].byte_end == len(long_line) - 1
    nested_yaml = ("---\nkey: " + "[" * 5000 + "\n---\n# T\n").encode()
    assert parse_document(nested_yaml, "x.md", FacetSchema(), 350).problems


def test_runs_of_markup_without_partners_parse_in_one_pass() -> None:
    """Each of these took seconds to minutes before (a pattern reread the rest of the text from every bracket or
    backtick); what follows the run is still read: the link, the code span, the fenced code."""
    brackets = ("# Links\n\n" + "[](" * 16_000 + "\n\nSee [the guide](guide.md).\n").encode()
    assert parse_document(brackets, "x.md", FacetSchema(), 350).link_keys == ["path:guide"]
    ticks = "# Code\n\n" + "`" * 50_000 + "\n\nCall `reclaimBatch` first.\n\n```\nflushQueue()\n```\n"
    doc = parse_document(ticks.encode(), "x.md", FacetSchema(), 350)
    found = {symbol for chunk in doc.chunks for symbol, _ in chunk_symbols(chunk.breadcrumb, chunk.body)}
    assert {"reclaimBatch", "flushQueue"} <= found
    runs = {  # each reread the rest of the text from every character of its run
        "[](<" * 25_000: "", "# " + "".join(f"a_{i} " for i in range(4_000)): "a_3999",
        "```\n." + "$" * 100_000 + "\n```": "", "# (" + "a:" * 50_000: "", "# a" + "*" * 100_000 + "b": "",
        "".join("`" * length + " x " for length in range(1, 1_400)): "",  # no run has a partner
    }
    for run, symbol in runs.items():
        doc = parse_document(f"{run}\n\nSee [the guide](guide.md) and `reclaimBatch`.\n".encode(), "x.md",
                             FacetSchema(), 350)
        found = {s for chunk in doc.chunks for s, _ in chunk_symbols(chunk.breadcrumb, chunk.body)}
        assert "path:guide" in doc.link_keys and "reclaimBatch" in found and (not symbol or symbol in found)
    long_title = '# T\n\n[a](b.md "' + "x" * 600 + '")\n'  # no length cap: a long title keeps its link
    assert parse_document(long_title.encode(), "x.md", FacetSchema(), 350).link_keys == ["path:b"]
    many = ("---\naliases: [" + ", ".join(f"alias {i}" for i in range(3_000)) + "]\n---\n# M\n\nx\n").encode()
    assert len(parse_document(many, "x.md", FacetSchema(), 350).aliases) == 64  # written into every chunk
    long_url = "https://" + "a" * 10_000
    assert classify(long_url + "/b").literal == long_url + "/b" and classify(long_url + "\tb").shape == "text"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_bytes_on_the_rpc_channel_get_an_answer(fuzz_engine: Engine, line: bytes) -> None:
    from autodoc_core.surface.rpc import handle_line

    answer = handle_line(fuzz_engine, line)
    assert answer is None or isinstance(answer, dict | list)
    if isinstance(answer, dict) and "error" in answer:
        assert isinstance(answer["error"]["code"], int) and answer["error"]["data"]["reason"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["search.query", "search.stream", "search.related", "workspace.status", "doc.read",
                        "changes.since", "workspace.configure",
                        "doc.list", "workspace.index", "nope"]),
       st.one_of(JSON_VALUES, st.lists(JSON_VALUES, max_size=3).map(lambda rest: ["kb", *rest])))
def test_any_params_give_a_result_or_a_json_rpc_error(fuzz_engine: Engine, method: str, params) -> None:
    import json

    from autodoc_core.surface.rpc import handle_message

    if method in ("workspace.index", "workspace.configure") and isinstance(params, list) and params[:1] == ["kb"]:
        params = ["kb-missing", *params[1:]]  # keep the shared workspace as it is
    answer = handle_message(fuzz_engine, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    json.dumps(answer)  # always serialisable
    if "error" in answer:
        assert answer["error"]["code"] != -32603, answer  # never an internal error


RELATED_OPTIONS = st.dictionaries(st.sampled_from(["line", "limit", "stages", "facets", "paths", "tags", "mode"]),
                                  st.integers(-3, 12) | JSON_VALUES, max_size=3)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(LINES)), RELATED_OPTIONS)
def test_related_with_any_options_answers_or_says_what_is_wrong(fuzz_engine: Engine, path: str, opts: dict) -> None:
    try:
        answer = fuzz_engine.search_related("kb", path, opts).to_wire()
    except AutodocError as exc:
        assert exc.code != INTERNAL_ERROR and exc.reason
        return
    for hit in answer["hits"]:
        assert hit["path"] in LINES and hit["path"] != path
        assert 1 <= hit["line_start"] <= hit["line_end"] <= LINES[hit["path"]]
    stages = answer["stages"]
    assert set(stages["performed"]) <= {*stages["requested"], "link"}
    assert set(stages["requested"]) <= {*stages["performed"], *stages["skipped"]}


ANY_CHARACTER = st.characters(codec="utf-8")  # every Unicode category, surrogates excluded (not encodable)
MARKDOWN_BITS = st.sampled_from(["\n", "\n# ", "\n## ", "\n---\n", "\n```\n", "`", "[[", "]]", "](", "#", ":", "\r\n",
                                 "\x00", "\u2028", "\u202e", "\ufeff", "\U0001f600", "\u0301"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(MARKDOWN_BITS, st.text(ANY_CHARACTER, max_size=30)), max_size=30).map("".join))
def test_any_unicode_document_indexes_and_is_searchable_or_reported(fuzz_engine: Engine, text: str) -> None:
    root = Path(fuzz_engine.workspace_status("kb")["root"])
    # A heading first: whatever follows, the document has a title to be found by.
    (root / "fuzzed.md").write_bytes(f"# Fuzzmarker\n\n{text}".encode())
    report = fuzz_engine.workspace_index("kb", {"paths": ["fuzzed.md"]})
    assert report["scanned"] == 1
    assert report["added"] + report["changed"] + report["unchanged"] + report["skipped"] == 1
    problems = [p for p in fuzz_engine.workspace_status("kb")["problems"] if p["path"] == "fuzzed.md"]
    found = [hit["path"] for hit in fuzz_engine.search_query("kb", "fuzzmarker", None).to_wire()["hits"]]
    if report["skipped"]:
        assert problems and all(p["reason"] for p in problems)
        assert found == []  # a skipped file leaves no stale rows behind
    else:
        assert found[:1] == ["fuzzed.md"]
    for hit in fuzz_engine.search_query("kb", text[:50], None).to_wire()["hits"]:
        assert hit["path"] in {*LINES, "fuzzed.md"}


def test_hostile_files_are_reported_with_reasons_and_the_rest_indexed(engine: Engine, kb: Path) -> None:
    write(kb, "good.md", "# Good\n\nordinary searchable words\n")
    write(kb, "nul.md", b"# Bin\n\x00\x01\x02 binary")
    write(kb, "latin1.md", "# Caf\xe9\n\nna\xefve text\n".encode("latin-1"))
    write(kb, "yaml.md", "---\ntitle: [unclosed\n---\n# Broken yaml\n\nbody still indexed\n")
    write(kb, "headings.md", "".join(f"## H{i}\n\nx{i}\n" for i in range(10_000)))
    write(kb, "longline.md", b"# Long\n\n" + b"y" * 10_000_000 + b"\n")
    write(kb, "huge.md", b"# Huge\n\n" + b"z " * 6_000_000)
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none", "max_file_bytes": 11_000_000})  # room for a 10 MB line
    report = engine.workspace_index("kb")
    reasons = {p["path"]: p["reason"] for p in engine.workspace_status("kb")["problems"]}
    assert "binary content" in reasons["nul.md"]
    assert "over the 11 MB limit" in reasons["huge.md"]
    assert "malformed YAML" in reasons["yaml.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert report["added"] == 5  # good, latin1, yaml, headings and longline; nul and huge skipped
    assert engine.search_query("kb", "ordinary", None).to_wire()["hits"][0]["path"] == "good.md"
    assert engine.search_query("kb", "x9999", None).to_wire()["hits"][0]["path"] == "headings.md"
    assert engine.doc_list("kb", "long")[0]["path"] == "longline.md"


def test_a_problems_reason_does_not_repeat_its_kind(engine: Engine, kb: Path) -> None:
    """Surfaces show a problem as ``kind: reason`` (the quickfix list of :AutodocStatus): the reason must not
    start with the kind again ("skipped: skipped: binary content")."""
    write(kb, "good.md", "# Good\n\nwords\n")
    write(kb, "nul.md", b"# Bin\n\x00\x01 binary")
    write(kb, "huge.md", b"# Huge\n\n" + b"z " * 600_000)
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none", "max_file_bytes": 1_000_000})
    report = engine.workspace_index("kb")
    problems = engine.workspace_status("kb")["problems"]
    assert {p["path"] for p in problems} == {"nul.md", "huge.md"}
    for problem in [*problems, *report["problems"]]:
        assert problem["kind"] == "skipped"
        assert not problem["reason"].lower().startswith(problem["kind"]), problem
    shown = {p["path"]: f"{p['kind']}: {p['reason']}" for p in problems}  # as lua/autodoc/status.lua writes it
    assert shown["nul.md"] == "skipped: binary content (NUL bytes), not Markdown text"
