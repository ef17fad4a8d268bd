"""Identifier-shaped queries find the page that defines the identifier, at rank 1."""

from __future__ import annotations

import re
from pathlib import Path

import apsw
import pytest

from autodoc_core.parse.frontmatter import FacetSchema
from autodoc_core.parse.symbols import chunk_symbols, lookup_keys
from autodoc_core.retrieve import symbols
from autodoc_core.retrieve.query import parse_query
from autodoc_core.retrieve.symbols import classify, holding_phrase, pasted_phrase
from tests.conftest import search, write

# Long, unrelated prose: it keeps the page that holds a name or a line from winning on its words alone.
FILLER = "Bake the bread with flour, water, salt and yeast; knead, proof and bake again. " * 12
NOISE = ("Add a retry to the resilience pipeline. The pipeline adds retries; retry the pipeline. "
         "Reclaim the batch, reclaim every batch, batch after batch. The max batch tokens limit bounds the batch. "
         "Vector reserve: reserve the vector before you reserve more. OSSL EVP unsupported errors mean "
         "the err is unsupported. Switching errors: rpc switching. Commit early. ") * 6


@pytest.fixture
def api_kb(engine, kb: Path):
    write(kb, "guides/overview.md", f"# Overview\n\n## Retries and batches\n\n{NOISE}\n\n## More\n\n{NOISE}\n")
    write(kb, "guides/faq.md", f"# FAQ\n\n{NOISE}\n")
    write(kb, "api/resilience.md", """
        # ResiliencePipeline

        ## ResiliencePipeline.AddRetry

        Adds a retry strategy.

        ```csharp
        var pipeline = new ResiliencePipelineBuilder().AddRetry(new RetryStrategyOptions()).Build();
        ```
        """)
    write(kb, "api/cpp-vector.md", "# Containers\n\n## std::vector::reserve\n\nIncrease the capacity.\n")
    write(kb, "api/python-gc.md", "# GC (Python)\n\n## reclaim_batch()\n\n```python\ndef reclaim_batch(n):\n"
                                  "    ...\n```\n\nFrees up to n objects.\n")
    write(kb, "api/js-gc.md",
          "# GC (JavaScript)\n\n## reclaimBatch\n\n```js\nexport function reclaimBatch(n) {}\n```\n")
    write(kb, "reference/cli.md", "# CLI\n\n## Options\n\n| flag | meaning |\n|---|---|\n"
                                  "| `--max-batch-tokens` | tokens per batch |\n| `--port` | port |\n")
    write(kb, "reference/errors.md",
          "# Errors\n\n## ERR_OSSL_EVP_UNSUPPORTED\n\nNode 17 and OpenSSL 3.\n\n"
          "## JSON-RPC codes\n\n| code | name |\n|---|---|\n| `-32069` | `rpc.switching` |\n")
    write(kb, "changelog.md", "# Changelog\n\n## 1.4.0\n\nFixed the reclaim loop (3f9a2b7c1d0e).\n")
    write(kb, "reference/gates.md", "# Feature gates\n\n## Storage\n\nThe `SELinuxMountReadWriteOncePod` gate "
                                    "and the `-nap-v5-agent` image suffix.\n")
    write(kb, "guides/licensing.md", "# Licensing\n\n## Secret\n\nThe installer stores the JWT as "
                                     "**nginx-mgmt-license** in the namespace.\n")
    write(kb, "guides/nginx.md", f"# NGINX\n\nThe nginx license: mgmt of each license, nginx mgmt.\n\n{NOISE}\n")
    write(kb, "guides/certs.md", "# Certificates\n\n## Chain\n\nEvery x5090 series HSM signs the chain.\n\n"
                                 "## Audit\n\nThe **Änderung-Log-Id** names each audit record.\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    engine.workspace_index("kb")
    return engine


@pytest.mark.parametrize("query, page, kind", [
    ("ResiliencePipeline.AddRetry", "api/resilience.md", "dotted"),
    ("AddRetry", "api/resilience.md", "camel_case"),
    ("std::vector::reserve", "api/cpp-vector.md", "path"),
    ("vector::reserve", "api/cpp-vector.md", "path"),
    ("reclaim_batch()", "api/python-gc.md", "call"),
    ("reclaim_batch", "api/python-gc.md", "snake_case"),
    ("reclaimBatch", "api/js-gc.md", "camel_case"),
    ("--max-batch-tokens", "reference/cli.md", "flag"),
    ("ERR_OSSL_EVP_UNSUPPORTED", "reference/errors.md", "screaming_case"),
    ("-32069", "reference/errors.md", "error_code"),
    ("3f9a2b7", "changelog.md", "hex"),
    # Pasted alone, looser forms count too: an acronym then words, a one-dash flag, a flag without its dashes.
    ("SELinuxMountReadWriteOncePod", "reference/gates.md", "lone_token"),
    ("-nap-v5-agent", "reference/gates.md", "lone_token"),
    ("max-batch-tokens", "reference/cli.md", "lone_token"),
    # No symbol was collected from bold text: the lexical candidates' text is read for it.
    ("nginx-mgmt-license", "guides/licensing.md", "lone_token"),
])
def test_identifier_finds_its_definition_first(api_kb, query, page, kind) -> None:
    answer = search(api_kb, query)
    assert answer["hits"][0]["path"] == page, [h["path"] for h in answer["hits"][:3]]
    assert answer["query_shape"]["shape"] == "identifier" and kind in answer["query_shape"]["kinds"]
    assert "symbol" in answer["stages"]["performed"]
    assert "symbol" in answer["hits"][0]["via"]


def test_text_queries_do_not_run_the_symbol_retriever(api_kb) -> None:
    answer = search(api_kb, "reclaim the batch and reserve the vector")
    assert answer["query_shape"] == {"shape": "text", "kinds": [], "identifiers": [], "pasted": False,
                                     "literal": "", "phrase": "reclaim the batch and reserve the vector"}
    assert "symbol" not in answer["stages"]["performed"]
    assert all("symbol" not in h["via"] for h in answer["hits"])


def test_symbol_retriever_can_be_switched_off(api_kb) -> None:
    answer = search(api_kb, "reclaimBatch", retrieval={"symbol": False})
    assert "symbol" not in answer["stages"]["performed"]


def test_filters_apply_to_the_symbol_retriever(api_kb) -> None:
    answer = search(api_kb, "ERR_OSSL_EVP_UNSUPPORTED", paths=["guides"])
    assert answer["hits"] and all(h["path"].startswith("guides/") for h in answer["hits"])
    assert all("symbol" not in h["via"] for h in answer["hits"])  # the defining page is filtered out


def test_edits_update_symbols(api_kb, kb: Path) -> None:
    write(kb, "api/js-gc.md", "# GC (JavaScript)\n\n## collectBatch\n\nRenamed.\n")
    api_kb.workspace_index("kb")
    assert all(h["path"] != "api/js-gc.md" or "symbol" not in h["via"] for h in search(api_kb, "reclaimBatch")["hits"])
    assert search(api_kb, "collectBatch")["hits"][0]["path"] == "api/js-gc.md"


def test_extraction_and_shapes() -> None:
    symbols = dict(chunk_symbols("API › Client.connect", "Call `connect(url)`; see a1b2c3d9 and `MAX_RETRIES`.\n"))
    assert symbols["Client.connect"] == 4 and symbols["connect"] == 2 and symbols["MAX_RETRIES"] == 2
    assert "a1b2c3d9" in symbols
    assert lookup_keys("a.b.c") == [("a.b.c", False), ("b.c", True), ("c", True)]
    assert classify("deadbeefcafe").shape == "text"  # hex needs a digit: words are not commits
    assert classify("how do I use `thing`").tokens == ["thing"]
    assert classify("plain words only").shape == "text"
    assert classify("a built-in retry with IPv6 and x509").shape == "text"  # inside prose these are words
    assert classify("`oidc-config-map`").as_dict() == {"shape": "identifier", "kinds": ["code_span"],
                                                        "identifiers": ["oidc-config-map"], "pasted": True,
                                                        "literal": "oidc-config-map", "phrase": ""}
    assert not classify("why does reclaimBatch stall").pasted
    assert [classify(q).kinds for q in ("listen-client-http-urls", "CSIVolumeFSGroupPolicy", "http2", "kubernetes")] \
        == [["lone_token"], ["lone_token"], ["lone_token"], []]
    assert [classify(q).shape for q in ("e-mail", "built-in", "APIs", "URLs", "“follow-up”")] == ["text"] * 5
    assert [classify(q).tokens for q in ("(x509)", "x509?", "reclaimBatch.")] == [["x509"], ["x509"], ["reclaimBatch"]]
    assert [classify(q).pasted for q in ("reclaimBatch?", "Pipeline.AddRetry AddRetry", "reclaim reclaimBatch",
                                         "configMap on")] == [True, True, False, False]
    # A variable's $ is pasted with it; a file path, API path or prefixed key is one identifier as written.
    assert [(classify(q).pasted, classify(q).literal) for q in ("$request_id", "$request_id in logs")] \
        == [(True, "request_id"), (False, "")]
    assert [classify(q).literal for q in ('"--client_id"', "$scope.$apply", "Pipeline.AddRetry AddRetry")] \
        == ["--client_id", "$scope.$apply", ""]  # the sigil of a name is kept; several tokens hold no literal
    paths = ("/etc/nginx/conf.d/dashboard.conf", "/api/platform/v1/instances", "kubernetes.io/h2c", "./run.sh",
             "src/main.py")
    assert [classify(q).as_dict() for q in paths] == [
        {"shape": "identifier", "kinds": ["file_path"], "identifiers": [q], "pasted": True, "literal": q,
         "phrase": ""}
        for q in paths]
    assert [classify(q).shape for q in ("and/or", "TCP/UDP", "read/write", "I/O", "24/7", "2024/01/02")] \
        == ["text"] * 6
    # A documented route keeps its placeholders, a URL is one identifier; brackets around either are dropped.
    routes = ("/api/v1/instances/{instanceObjectID}/config", "/users/:id", "users/{id}", "/as/<environment_id>")
    urls = ("https://auth.example.com/<environment_id>/as", "s3://bucket/key", "http://localhost:8080/api")
    assert [(classify(q).kinds, classify(q).literal, classify(q).pasted) for q in routes + urls] \
        == [(["file_path"], q, True) for q in routes] + [(["url"], q, True) for q in urls]
    assert [classify(q).literal for q in ("<https://example.com/a>", "`/users/{id}`.", "(/users/:id)")] \
        == ["https://example.com/a", "/users/{id}", "/users/:id"]
    assert classify("see https://example.com/a for more").literal == ""  # in a sentence, not pasted
    # Copied out of a sentence: a bracket with no partner in the token is the sentence's; a pair inside stays.
    assert [classify(q).literal for q in ("/etc/hosts)", "(/etc/hosts", "/etc/nginx/nginx.conf).",
                                          "https://example.com/a),", "https://en.wikipedia.org/wiki/Foo_(bar)")] \
        == ["/etc/hosts", "/etc/hosts", "/etc/nginx/nginx.conf", "https://example.com/a",
            "https://en.wikipedia.org/wiki/Foo_(bar)"]
    assert [classify(q).pasted for q in ("`Vec<T>`", "`a[0]`", "`arr[i]` `buf[n]`")] == [False] * 3  # code, not paths


def test_a_flag_is_found_under_its_other_spellings(api_kb, tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "autodoc.db"), flags=apsw.SQLITE_OPEN_READONLY)
    ws_id = conn.execute("SELECT id FROM workspaces WHERE name = 'kb'").fetchone()[0]

    def pages(spelling: str) -> list[str]:  # the symbols table alone: no lexical candidates to read
        return [conn.execute("SELECT d.path FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id = ?",
                             (chunk_id,)).fetchone()[0] for chunk_id in symbols.search(conn, ws_id, [spelling])]

    assert [pages(s) for s in ("max-batch-tokens", "-max-batch-tokens", "--max-batch-tokens")] \
        == [["reference/cli.md"]] * 3


def test_the_text_tier_reads_only_lexical_candidates_that_hold_the_identifier(api_kb) -> None:
    answer = search(api_kb, "nginx-mgmt-license")
    by_symbol = {h["path"] for h in answer["hits"] if "symbol" in h["via"]}
    assert by_symbol == {"guides/licensing.md"}  # guides/nginx.md has the words, not the identifier


def test_the_text_tier_folds_any_case_and_respects_word_edges(api_kb, tmp_path: Path) -> None:
    folded = search(api_kb, "`änderung-log-id`")  # the page writes Änderung-Log-Id, in bold
    assert folded["hits"][0]["path"] == "guides/certs.md" and "symbol" in folded["hits"][0]["via"]
    conn = apsw.Connection(str(tmp_path / "autodoc.db"), flags=apsw.SQLITE_OPEN_READONLY)
    ws_id = conn.execute("SELECT id FROM workspaces WHERE name = 'kb'").fetchone()[0]
    chain = [row[0] for row in conn.execute("SELECT c.id FROM chunks c JOIN documents d ON d.id = c.doc_id "
                                            "WHERE d.path = 'guides/certs.md' AND c.breadcrumb LIKE '%Chain'")]
    assert len(chain) == 1
    assert symbols.search(conn, ws_id, ["X5090"], lexical=chain) == chain
    assert symbols.search(conn, ws_id, ["x509"], lexical=chain) == []  # inside the longer word x5090


def test_a_compound_identifier_is_searched_as_its_pieces_in_order(engine, kb: Path) -> None:
    """A flag written without dashes or code marks (an italic table cell) is still found first:
    the pieces of a 3+ piece identifier form a phrase, not an OR of common words."""
    filler = "Usage reports: enforce the initial report, report usage, the initial usage report. " * 8
    write(kb, "guide.md", f"# Reporting\n\n{filler}\n")
    write(kb, "cli.md", "# CLI\n\n## Flags\n\n| flag | type |\n|---|---|\n"
                        "| _usage-report-enforce-initial-report_ | _bool_ |\n| _port_ | _int_ |\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    engine.workspace_index("kb")
    answer = search(engine, "--usage-report-enforce-initial-report")
    assert answer["hits"][0]["path"] == "cli.md"
    assert answer["query"]["terms"] == ["usage report enforce initial report"]
    split = search(engine, "built-in GET/POST")["query"]["terms"]  # two pieces, or a slash: separate words
    assert split == ["built", "get", "post"]


def test_in_hybrid_search_the_pages_holding_a_pasted_identifier_come_first(engine, kb: Path) -> None:
    """Short pages that only share an identifier's words (client id, logout redirect) win the blend on both
    retrievers, and the lexical leader is kept on top for identifier queries; still, every page that holds
    the pasted name comes first, here a long setup page that holds each name once."""
    write(kb, "guides/clients.md", "# Client id\n\n## The client id\n\nThe client id names the OAuth client.\n")
    write(kb, "guides/logout.md", "# Logout redirect\n\n## OIDC logout redirect\n\nAfter OIDC logout, the logout "
                                  "redirect sends users back.\n")
    write(kb, "guides/dash.md", "# Dashboard conf\n\n## Dashboard conf\n\nThe dashboard conf holds its settings.\n")
    write(kb, "reference/setup.md", f"# Setup notes\n\n## Notes\n\n{FILLER}\n\n```shell\n./configure.sh --client_id abc"
                                    f"\n```\n\n{FILLER}\n\n```nginx\nreturn 302 $oidc_logout_redirect;\n```\n")
    write(kb, "reference/dashboard.md", f"# More notes\n\n{FILLER}\n\nPut it in /etc/nginx/conf.d/dashboard.conf."
                                        f"\n\n{FILLER}\n")
    engine.workspace_add("kb", str(kb))
    assert engine.workspace_index("kb", {"wait": "semantic"})["semantic"] == "ready"
    for query, holder, sharer in (("--client_id", "reference/setup.md", "guides/clients.md"),
                                  ("$oidc_logout_redirect", "reference/setup.md", "guides/logout.md"),
                                  ("/etc/nginx/conf.d/dashboard.conf", "reference/dashboard.md", "guides/dash.md")):
        answer = search(engine, query)
        assert answer["mode_used"] == "hybrid" and answer["query_shape"]["pasted"], query
        assert answer["query"]["holding_pasted"] >= 1 and answer["query_shape"]["literal"] == query.lstrip("$")
        found = [h["path"] for h in answer["hits"]]
        assert found[0] == holder and sharer in found, (query, found)
        # Hybrid only: a retriever alone keeps its own order; by words alone the holders are counted all the same.
        assert "holding_pasted" not in search(engine, query, stages=["semantic"])["query"]
        by_words = search(engine, query, stages=["lexical"])
        assert by_words["query"]["holding_pasted"] >= 1 and by_words["query"]["problems"] == [], query
    typed = search(engine, "where is $oidc_logout_redirect set")  # in a sentence the rule does not apply
    assert not typed["query_shape"]["pasted"] and "holding_pasted" not in typed["query"]
    assert typed["query_shape"]["phrase"] == ""  # two words that are not stopwords: no pasted line either


def test_a_pasted_route_or_url_is_held_as_written(engine, kb: Path, monkeypatch) -> None:
    """A route copied with its placeholders, or a URL, is one identifier: the long page holding it in a table
    cell or a sentence comes first, above short pages about its words. The control reads neither as a path,
    as before routes and URLs were: the same searches then put another page first."""
    pages = {
        "guides/instances.md": "# Instance config\n\n## Instance object config\n\nEach instance object has a config; "
                               "the API returns the instance config.\n",
        "guides/environments.md": "# Auth environments\n\n## Environment id\n\nEach auth environment has an "
                                  "environment id; the auth server is per environment.\n",
        "guides/api-v1.md": "# API v1 instances\n\nIn API v1, instances are found by instanceObjectID; each instance "
                            "has a config.\n",
        "guides/issuer.md": "# Auth example\n\nThe https issuer of auth.example.com names the environment_id of each "
                            "environment.\n",
        "reference/routes.md": f"# Routes\n\n{FILLER}\n\n| route | returns |\n|---|---|\n"
                               f"| GET /api/v1/instances/{{instanceObjectID}}/config | the file |\n\n{FILLER}\n",
        "reference/sso.md": f"# Sign-on notes\n\n{FILLER}\n\nThe issuer is "
                            f"https://auth.example.com/<environment_id>/as for every tenant.\n\n{FILLER}\n",
    }
    for path, text in pages.items():
        write(kb, path, text)
    engine.workspace_add("kb", str(kb))
    assert engine.workspace_index("kb", {"wait": "semantic"})["semantic"] == "ready"
    pasted = (("/api/v1/instances/{instanceObjectID}/config", "reference/routes.md"),
              ("https://auth.example.com/<environment_id>/as", "reference/sso.md"))
    for query, holder in pasted:
        answer = search(engine, query)
        assert answer["mode_used"] == "hybrid" and answer["query_shape"]["literal"] == query
        assert answer["query"]["holding_pasted"] == 1 and answer["hits"][0]["path"] == holder, query
    monkeypatch.setattr(symbols, "_FILE_PATH", re.compile("(?!)"))
    monkeypatch.setattr(symbols, "_URL", re.compile("(?!)"))
    for query, holder in pasted:
        control = search(engine, query)
        found = [h["path"] for h in control["hits"]]
        assert control["query_shape"]["literal"] == "" and found[0] != holder, (query, found)


def test_a_pasted_line_is_the_query_as_a_page_would_hold_it() -> None:
    assert pasted_phrase('"Upstream sent too big header."') == "upstream sent too big header"
    assert pasted_phrase("**Error**: `nginx -t` failed with status 1") == "error: nginx -t failed with status 1"
    assert pasted_phrase(".NET runtime version not found") == ".net runtime version not found"
    assert pasted_phrase("upstream sent too big head*") == "upstream sent too big head*"  # a prefix stays one
    # Fewer than four words, fewer than three that are not stopwords, or no words at all: no line.
    assert [pasted_phrase(q) for q in ("watch bookmark events", "what are the risks", "- - - - -", "")] == [""] * 4
    # The characters between tokens as typed, facets cut out: a quoted path stays next to its comma.
    parsed = parse_query('File "/app/main.py", line 12, in <module> tag:python', FacetSchema())
    assert parsed.typed_text == 'File "/app/main.py", line 12, in <module>'
    assert classify(parsed.semantic_text, parsed.typed_text).phrase == 'file "/app/main.py", line 12, in <module>'


def test_holding_a_line_word_for_word() -> None:
    """Across a line break and inline markup, not across a blank line, not inside a longer word; a final
    ``*`` lets the last word go on. Texts come case-folded, as ``symbols`` reads them."""
    folded = {1: ("", "the log says `upstream sent too big\nheader` while reading"),
              2: ("", "reupstream sent too big header"), 3: ("", "upstream sent too big headers"),
              4: ("", "xupstream sent too big header; then upstream sent too big header."),
              5: ("upstream sent too **big** header", ""), 6: ("", "upstream sent too\n\nbig header"),
              7: ("", "upstream sent too big")}
    line = "upstream sent too big header"
    assert holding_phrase(None, line, list(folded), folded) == {1, 4, 5}
    assert holding_phrase(None, line[:-3] + "*", list(folded), folded) == {1, 3, 4, 5}
    assert holding_phrase(None, "", list(folded), folded) == holding_phrase(None, line, [], folded) == set()
    # Typographic and straight quotes are one: a line copied from a rendered page matches its Markdown.
    quoted = {1: ("", "the agent can’t reach the “default” upstream"), 2: ("", "the agent can't reach the upstream")}
    assert holding_phrase(None, pasted_phrase("The agent can't reach the \"default\" upstream"), [1, 2], quoted) == {1}
    assert holding_phrase(None, pasted_phrase("the agent can’t reach the upstream."), [1, 2], quoted) == {2}


def test_in_hybrid_search_the_pages_holding_a_pasted_line_come_first(engine, kb: Path, monkeypatch) -> None:
    """An error message pasted as it was logged: the embedding ranks short pages about its words above the
    long page that holds the line (across a line break and inline code), so the leader check does not keep
    lexical's first hit, that page, on top; with the rule, the holder comes first, quoted or not. The control
    raises the rule's word count out of reach: the same search then puts a short page first."""
    write(kb, "guides/headers.md", "# Upstream headers\n\n## Big response headers\n\nWhen an upstream sends a "
                                   "big header, reading the response header takes longer.\n")
    write(kb, "guides/buffers.md", "# Header buffers\n\n## Reading response headers\n\nThe upstream header "
                                   "is too big for the buffer while reading the response.\n")
    write(kb, "reference/errors.md", f"# Error log notes\n\n{FILLER}\n\nThe log says `upstream sent too big "
                                     f"header`\nwhile reading response header from upstream.\n\n{FILLER}\n")
    engine.workspace_add("kb", str(kb))
    assert engine.workspace_index("kb", {"wait": "semantic"})["semantic"] == "ready"
    line = "Upstream sent too big header while reading response header."
    for query in (f'"{line}"', line):
        answer = search(engine, query)
        assert answer["mode_used"] == "hybrid" and not answer["query_shape"]["pasted"]
        assert answer["query_shape"]["phrase"] == "upstream sent too big header while reading response header"
        assert answer["query"]["holding_pasted"] == 1
        assert answer["hits"][0]["path"] == "reference/errors.md", query
        for alone in ("lexical", "semantic"):  # by words alone only a pasted identifier's holders are counted
            assert "holding_pasted" not in search(engine, query, stages=[alone])["query"]
    monkeypatch.setattr(symbols, "PHRASE_MIN_WORDS", 99)
    control = search(engine, line)
    assert control["query_shape"]["phrase"] == "" and control["hits"][0]["path"] != "reference/errors.md"


def test_the_symbol_stage_goes_with_the_words_stage(engine, kb: Path) -> None:
    """A new user's walk: with Lexical unchecked, rows read `[symbol+semantic]`, a stage with no box. The symbol
    retriever matches the identifier word for word, beside the word search: off with it."""
    from tests.model_servers import model_server

    write(kb, "pool.md", "# Pool\n\n## Reclaiming\n\nCall `reclaimBatch(n)` to give pages back.\n")
    with model_server("tei") as server:
        engine.workspace_add("kb", str(kb))
        engine.workspace_configure("kb", {"embedder": {"provider": "tei", "url": server.url, "timeout": 120}})
        assert engine.workspace_index("kb", {"wait": "semantic"})["semantic"] == "ready"
        both = engine.search_query("kb", "reclaimBatch").to_wire()
        meaning = engine.search_query("kb", "reclaimBatch", {"stages": ["semantic"]}).to_wire()
    assert "symbol" in both["stages"]["performed"] and "symbol" in both["hits"][0]["via"]
    assert meaning["stages"]["performed"] == ["semantic"], meaning["stages"]
    assert all(hit["via"] == ["semantic"] for hit in meaning["hits"]), meaning["hits"]
