"""Heading-scoped chunks: breadcrumbs, splitting at block boundaries, exact spans."""

from __future__ import annotations

from pathlib import Path

from autodoc_core.parse.chunk import DEFAULT_SECTION_TOKENS, estimate_tokens
from autodoc_core.parse.document import parse_document
from autodoc_core.parse.frontmatter import FacetSchema
from tests.conftest import write


def parse(raw: bytes | str, budget: int = 350, relpath: str = "doc.md"):
    data = raw.encode() if isinstance(raw, str) else raw
    return parse_document(data, relpath, FacetSchema(), budget)


def assert_spans_exact(raw: bytes, chunks) -> None:
    lines = raw.split(b"\n")
    for chunk in chunks:
        by_bytes = raw[chunk.byte_start : chunk.byte_end]
        by_lines = b"\n".join(line.rstrip(b"\r") for line in lines[chunk.line_start - 1 : chunk.line_end])
        assert by_bytes.replace(b"\r\n", b"\n") == by_lines, chunk
        assert not by_bytes.endswith((b"\n", b"\r"))


ADR = """\
# ADR 0203

Intro paragraph.

## 4. Storage Engine

We store things.

### 4.4 Constants

The constant `reclaimBatch` is 64.

## 5. Consequences

Fine.
"""


def test_breadcrumbs_follow_the_heading_path() -> None:
    doc = parse(ADR)
    crumbs = [c.breadcrumb for c in doc.chunks]
    assert crumbs == [
        "ADR 0203",
        "ADR 0203 › 4. Storage Engine",
        "ADR 0203 › 4. Storage Engine › 4.4 Constants",
        "ADR 0203 › 5. Consequences",
    ]
    assert doc.chunks[2].body == "The constant `reclaimBatch` is 64."
    assert (doc.chunks[2].line_start, doc.chunks[2].line_end) == (9, 11)
    assert doc.title == "ADR 0203"


def test_spans_are_exact_bytes_and_lines() -> None:
    raw = ("---\ntitle: Ünïcode\n---\n# Ωmega\n\nπ text ✓\n\n## Two\n\nmore\n").encode()
    doc = parse(raw)
    assert_spans_exact(raw, doc.chunks)
    assert raw[doc.chunks[0].byte_start : doc.chunks[0].byte_end].decode() == "# Ωmega\n\nπ text ✓"


def test_crlf_files_keep_exact_spans() -> None:
    raw = b"# One\r\n\r\nalpha\r\n\r\n## Two\r\n\r\nbeta\r\n"
    doc = parse(raw)
    assert [c.body for c in doc.chunks] == ["alpha", "beta"]
    assert_spans_exact(raw, doc.chunks)


def test_large_section_splits_between_paragraphs_and_keeps_breadcrumb() -> None:
    paragraphs = "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(8))
    raw = f"# Big\n\n## Part\n\n{paragraphs}\n"
    doc = parse(raw, budget=100)
    parts = [c for c in doc.chunks if c.breadcrumb == "Big › Part"]
    # A paragraph is 312 characters, about 78 tokens: two would pass the budget of 100, so each
    # part holds exactly one, cut at the blank line. Paragraph i is on line 5 + 2i.
    assert [c.body.split()[:2] for c in parts] == [["Paragraph", str(i)] for i in range(8)]
    assert [c.line_end for c in parts] == [5, 7, 9, 11, 13, 15, 17, 19]
    assert_spans_exact(raw.encode(), doc.chunks)


def test_code_fences_and_tables_up_to_four_budgets_are_not_cut() -> None:
    fence = "```python\n" + "\n".join(f"line_{i} = {i}" for i in range(80)) + "\n```"  # about 280 tokens
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * i} |" for i in range(60))  # about 230
    raw = f"# T\n\nBefore.\n\n{fence}\n\nBetween.\n\n{table}\n\nAfter.\n"
    doc = parse(raw, budget=75)
    bodies = [c.body for c in doc.chunks]
    assert any(b.startswith("```python") and b.endswith("```") for b in bodies)
    assert any(b.startswith("| a | b |") and b.rstrip().endswith("| 59 | 3481 |") for b in bodies)
    for body in bodies:
        assert body.count("```") in (0, 2)
    assert_spans_exact(raw.encode(), doc.chunks)


def test_preamble_before_first_heading_uses_the_title() -> None:
    doc = parse("---\ntitle: Notes\n---\nLoose text first.\n\n## Later\n\nbody\n")
    assert doc.chunks[0].breadcrumb == "Notes"
    assert doc.chunks[0].body == "Loose text first."
    assert doc.chunks[1].breadcrumb == "Notes › Later"


def test_heading_anchor_and_markup_are_stripped() -> None:
    doc = parse("# Title\n\n## Byte-Range *Caching* {#byte-range}\n\ntext\n")
    assert doc.chunks[-1].breadcrumb == "Title › Byte-Range Caching"


def test_heading_inside_code_fence_is_not_a_section() -> None:
    doc = parse("# Real\n\n```\n# not a heading\n```\n")
    assert [c.breadcrumb for c in doc.chunks] == ["Real"]


def test_text_hash_changes_only_with_text() -> None:
    first = parse(ADR)
    edited = parse(ADR.replace("Fine.", "Fine, mostly."))
    assert [c.text_hash for c in first.chunks[:3]] == [c.text_hash for c in edited.chunks[:3]]
    assert first.chunks[3].text_hash != edited.chunks[3].text_hash


def test_every_chunk_span_matches_the_file_on_disk(tmp_path: Path) -> None:
    path = write(tmp_path, "x.md", ADR + "\n- item one\n- item two\n\n> quote\n")
    raw = path.read_bytes()
    assert_spans_exact(raw, parse(raw).chunks)


def test_line_count_is_what_an_editor_shows() -> None:
    """A final newline ends the last line (a facet-only hit spans 1..line_count, so one more would point
    past the end of the file). Found by the fuzz test's well-formed-answer check ('-tag:*')."""
    assert parse("# A\n\nbody\n").line_count == 3
    assert parse("# A\n\nbody").line_count == 3
    assert parse("# A\n\nbody\n\n").line_count == 4
    assert parse("").line_count == 1


KEP_LIKE = """\
# KEP-2400: Node memory swap support

<!-- toc -->
- [Summary](#summary)
  - [Goals](#goals)
- [Swap limits](#swap-limits)
<!-- /toc -->

## Summary

Kubelets may use swap on Linux nodes.
<!--
Template guidance: what are the risks of swap? Explain the swap design here.
-->
More on swap.

## Risks

<!-- What are the risks of this proposal? -->

## Swap limits

- [Limits in the kernel docs](https://docs.kernel.org/admin-guide/cgroup-v2.html#swap) apply.
- Every pod gets a share.
"""


def test_comments_and_tables_of_contents_are_not_indexed() -> None:
    """The table of contents names every heading, so it matched any query with heading words, and
    template comments (unseen in rendered Markdown) made sections of guidance alone; both ranked above the
    sections with text. They are left out of a section's text, and a section of nothing else is no chunk.
    A list of links that leave the page is text."""
    doc = parse(KEP_LIKE)
    assert [c.breadcrumb.split(" › ")[-1] for c in doc.chunks] == ["Summary", "Swap limits"]
    summary, limits = doc.chunks
    assert summary.body == "Kubelets may use swap on Linux nodes.\nMore on swap."
    assert (summary.line_start, summary.line_end) == (9, 15)  # the span is the file's, comments included
    assert limits.body.startswith("- [Limits in the kernel docs]")
    assert_spans_exact(KEP_LIKE.encode(), doc.chunks)
    plain = parse(KEP_LIKE.replace("<!--", "").replace("-->", ""))
    assert plain.chunks[-1].text_hash == limits.text_hash  # a section without them keeps its text, and vector
    assert parse("# Only a toc\n\n<!-- toc -->\n- [A](#a)\n<!-- /toc -->\n").chunks[0].breadcrumb == "Only a toc"


def test_what_looks_like_a_comment_or_a_toc_but_holds_content_is_kept() -> None:
    """A line of many comments then text is content (and is read in linear time: the first pattern
    backtracked through every split of the comments, minutes for 30 of them); so is a list of in-page links
    whose items hold a code block."""
    many = parse("# T\n\n" + "<!-- c -->" * 40 + " visible text\n")
    assert many.chunks[0].body.endswith("visible text")
    nested = parse("# T\n\n- [A](#a)\n\n  ```\n  code here\n  ```\n- [B](#b)\n")
    assert "code here" in nested.chunks[0].body


def test_a_block_over_four_budgets_is_cut_between_lines() -> None:
    """A generated API reference: 3,000 lines of HTML without a blank line is one block; as one chunk the
    model read its first 6,000 characters and a hit on it named 3,000 lines. Cut into parts of about one
    budget, each part is found by its own words and spans its own lines."""
    rows = "\n".join(f"<tr><td>field_{i}</td><td>sets the value number {i}</td></tr>" for i in range(3000))
    raw = f"# API\n\n## Types\n\n<table>\n{rows}\n</table>\n\n## After\n\nplain words\n"
    doc = parse(raw)
    parts = [c for c in doc.chunks if c.breadcrumb == "API › Types"]
    assert len(parts) > 100
    assert all(estimate_tokens(c.body) <= DEFAULT_SECTION_TOKENS for c in parts)
    holding = [c for c in parts if "field_2500<" in c.body]
    assert len(holding) == 1 and holding[0].line_start <= 2505 <= holding[0].line_end  # row 2500 is on line 2505
    assert [c.line_start for c in parts[1:]] == [c.line_end + 1 for c in parts[:-1]]  # no line lost or repeated
    assert doc.chunks[-1].body == "plain words"
    assert_spans_exact(raw.encode(), doc.chunks)
    lines = ["x" * 1392] * 4 + [" " * 12] * 150 + ["y" * 1392] * 4  # a cut part of blank lines alone is no chunk
    cut = parse("# Log\n\n```\n" + "\n".join(lines) + "\n```\n")
    assert all(c.body.strip() for c in cut.chunks) and len(cut.chunks) >= 8


def test_empty_anchors_and_rules_are_not_text() -> None:
    """Link targets put before the next heading (``<span id="sync"></span>``) and rules made chunks of
    nothing (a section of a heading and an anchor, a part of ``---`` alone) that ranked first for the
    heading's words; they are left out like comments."""
    raw = ("# Guide\n\n## Setup\n\nInstall it.\n\n---\n\n<span id=\"sync\"></span>\n## Sync\n\n"
           "<a name=\"sticky\"></a>\n### Sticky\n\nSticky learn text.\n\n<span id=\"x\">kept</span>\n")
    doc = parse(raw)
    assert [(c.breadcrumb, c.body) for c in doc.chunks] == [
        ("Guide › Setup", "Install it."),
        ("Guide › Sync › Sticky", 'Sticky learn text.\n\n<span id="x">kept</span>')]
    assert_spans_exact(raw.encode(), doc.chunks)


def test_a_heading_keeps_what_its_inline_code_holds() -> None:
    doc = parse("# RFC\n\n### Identify `-` and `_` on crates.io\n\nBoth.\n\n## The `_equiv` and `a*b*` forms of "
                "*emphasis* and __strong__\n\nText.\n")
    assert [c.breadcrumb for c in doc.chunks] == [
        "RFC › Identify - and _ on crates.io",
        "RFC › The _equiv and a*b* forms of emphasis and strong",
    ]


def test_an_index_of_headings_parsed_before_is_rewritten_where_they_change(engine, kb: Path) -> None:
    """An index whose breadcrumbs lost inline code's underscores (parser 7) is re-parsed at its next run: the
    sections under such headings get the heading as written, every other section keeps its row (its vector)."""
    from autodoc_core.parse.chunk import text_hash

    write(kb, "a.md", "# A\n\n## Set `max_batch`\n\nThe batch.\n\n## Plain\n\nOther text.\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    engine.workspace_index("kb")
    ws = engine._workspace("kb")
    with engine.store.exclusive(), engine.store.write() as conn:  # as parser 7 wrote it
        conn.execute("UPDATE documents SET chunked_with = 'p7' || substr(chunked_with, 3) WHERE ws_id = ?", (ws.id,))
        for chunk_id, body in conn.execute("SELECT id, body FROM chunks WHERE breadcrumb = 'A › Set max_batch'"
                                           ).fetchall():
            conn.execute("UPDATE chunks SET breadcrumb = ?, text_hash = ? WHERE id = ?",
                         ("A › Set maxbatch", text_hash("A › Set maxbatch", body), chunk_id))
        before = dict(conn.execute("SELECT breadcrumb, id FROM chunks WHERE ws_id = ?", (ws.id,)).fetchall())
    report = engine.workspace_index("kb")
    assert (report["changed"], report["chunks_written"]) == (1, 1)
    with engine.store.snapshot() as conn:
        after = dict(conn.execute("SELECT breadcrumb, id FROM chunks WHERE ws_id = ?", (ws.id,)).fetchall())
    assert set(after) == {"A › Set max_batch", "A › Plain"}
    assert after["A › Plain"] == before["A › Plain"]
