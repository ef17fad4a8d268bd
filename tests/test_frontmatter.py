"""Frontmatter: metadata, tags, aliases, abstract chunks, the facet schema and its coercions."""

from __future__ import annotations

from pathlib import Path

from autodoc_core.parse.frontmatter import CoercionError, coerce, load_schema, split_frontmatter
from tests.conftest import paths, search, write

SCHEMA = """
common: {status: string, owner: string, reviewed: boolean, labels: list}
types:
  adr: {number: integer, decided: date}
"""


def test_metadata_tags_aliases_and_inline_tags(engine, kb: Path, indexed) -> None:
    write(kb, "a.md", """
        ---
        title: Alpha Note
        aliases: [First, Début]
        tags: [storage, "#sqlite"]
        rating: 5
        ---
        # Heading

        Body mentions #inline-tag and `#notatag` and [x](#anchor).
        """)
    indexed()
    with engine.store.snapshot() as conn:
        title, aliases, tags, meta = conn.execute("SELECT title, aliases, tags, meta FROM documents").fetchone()
    assert title == "Alpha Note"
    assert aliases == '["First", "D\\u00e9but"]'
    assert tags == '["storage", "sqlite", "inline-tag"]'
    assert '"rating": 5' in meta
    assert paths(search(engine, "début")) == ["a.md"]  # aliases are searchable


def test_malformed_yaml_is_reported_and_body_still_indexed(engine, kb: Path, indexed) -> None:
    write(kb, "bad.md", "---\ntitle: [unclosed\n---\n# Bad\n\nthe quokka survives\n")
    report = indexed()
    assert report["added"] == 1
    assert any("malformed YAML" in p["reason"] and p["path"] == "bad.md" for p in report["problems"])
    assert paths(search(engine, "quokka")) == ["bad.md"]
    status = engine.workspace_status("kb")
    assert any(p["path"] == "bad.md" and "malformed YAML" in p["reason"] for p in status["problems"])


def billion_laughs(field: str) -> str:
    """YAML of a few lines whose aliases name 9**9 values."""
    lines = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)]
    return "\n".join([*lines, f"{field}: *i"]) + "\n"


def test_frontmatter_that_expands_past_its_limit_is_reported_and_body_indexed(engine, kb: Path, indexed) -> None:
    write(kb, "bomb.md", f"---\n{billion_laughs('tags')}---\n# Bomb\n\nthe quokka survives\n")
    write(kb, "alias.md", "---\nshared: &s [red, blue]\ntags: *s\n---\n# Alias\n\nsmall aliases work\n")
    report = indexed()
    assert report["added"] == 2
    assert any(p["path"] == "bomb.md" and "more than 10,000 values" in p["reason"] for p in report["problems"])
    assert paths(search(engine, "quokka")) == ["bomb.md"]
    assert paths(search(engine, "tag:blue")) == ["alias.md"]
    write(kb, "_schema/frontmatter.yaml", billion_laughs("status").replace("status: *i", "common: {status: *i}"))
    schema = load_schema(kb)  # the schema's own aliases are not expanded either
    assert schema.common == {} and "common.status: expected a type name" in schema.problem


def test_frontmatter_limits_count_values_text_and_binary() -> None:
    """Ten thousand fields pass; one long text named ten thousand times does not; binary is kept as its size."""
    fields = split_frontmatter(["---", *(f"k{i}: 1" for i in range(10_000)), "---"])
    assert fields.problem is None and len(fields.fields) == 10_000
    repeated = split_frontmatter(["---", "s: &s " + "x" * 100_000, "aliases: [" + ", ".join(["*s"] * 9_990) + "]",
                                  "---"])
    assert repeated.fields == {} and "characters of text" in repeated.problem
    as_keys = split_frontmatter(["---", "k: &k " + "x" * 100_000, "l: [" + ", ".join(["{? *k : 1}"] * 4_000) + "]",
                                 "---"])
    assert as_keys.fields == {} and "characters of text" in as_keys.problem
    binary = split_frontmatter(["---", "b: !!binary aGVsbG8=", "---"])
    assert binary.fields == {"b": "<binary, 5 bytes>"}


def test_merge_keys_repeated_through_aliases_do_not_multiply_a_mapping() -> None:
    """Nine levels of nine merges of the level below: 9^9 keys with a PyYAML before 6.0.4, ten here."""
    lines = ["a: &a {" + ", ".join(f"k{i}: {i}" for i in range(9)) + "}"]
    for level in range(9):
        below = "a" if level == 0 else f"m{level - 1}"
        lines.append(f"m{level}: &m{level} {{<<: [{', '.join([f'*{below}'] * 9)}]}}")
    merged = split_frontmatter(["---", *lines, "---"])
    assert merged.problem is None and len(merged.fields["m8"]) == 9


def test_a_schema_whose_aliases_repeat_a_long_mapping_is_cut_and_reported(kb: Path) -> None:
    bogus = ", ".join(f"a{i}: bogus" for i in range(3_000))
    write(kb, "_schema/frontmatter.yaml", f"f: &f {{{bogus}}}\ntypes: {{" + ", ".join(f"t{i}: *f" for i in range(3_000))
          + "}\n")
    schema = load_schema(kb)
    assert "more than 10,000 fields" in schema.problem and schema.problem.count("unknown type") == 19
    assert "... and" in schema.problem and len(schema.problem) < 5_000


def test_frontmatter_that_is_not_a_mapping_is_reported_and_read_as_body(engine, kb: Path, indexed) -> None:
    """A note that opens with a '---' rule, prose, another rule: the prose was blanked out of the index."""
    write(kb, "list.md", "---\n- just\n- a list\n---\nbody words here\n")
    write(kb, "rule.md", "---\nA thought about zeppelins\n---\n\n# Airships\n\nMore text.\n")
    report = indexed()
    assert any("not a mapping" in p["reason"] and "read as body text" in p["reason"] for p in report["problems"])
    hit = search(engine, "zeppelins")["hits"][0]
    assert hit["path"] == "rule.md" and hit["line_start"] <= 2 <= hit["line_end"]


def test_abstract_field_yields_a_chunk_that_can_be_excluded(engine, kb: Path, indexed) -> None:
    write(kb, "abs.md", """
        ---
        title: Abstracted
        abstract: A summary about platypus migration.
        owner: me
        ---
        # Abstracted

        The body talks about something else entirely.
        """)
    indexed()
    hits = search(engine, "platypus")["hits"]
    assert [h["kind"] for h in hits] == ["abstract"]
    assert (hits[0]["line_start"], hits[0]["line_end"]) == (3, 3)
    assert search(engine, "platypus", retrieval={"abstract_chunk": False})["hits"] == []


def test_schema_coerces_values_and_reports_misfits(engine, kb: Path, indexed) -> None:
    write(kb, "_schema/frontmatter.yaml", SCHEMA)
    write(kb, "adr1.md", "---\ntype: adr\nnumber: '7'\ndecided: 2024-01-05\nreviewed: yes\n---\n# One\n\nx\n")
    write(kb, "adr2.md", "---\ntype: adr\nnumber: seven\n---\n# Two\n\ny\n")
    report = indexed()
    misfit = [p for p in report["problems"] if p["path"] == "adr2.md"]
    assert misfit and "expected an integer" in misfit[0]["reason"]
    assert paths(search(engine, "number:7")) == ["adr1.md"]
    assert paths(search(engine, "number:007")) == ["adr1.md"]  # the query value is coerced too
    assert paths(search(engine, "decided:2024-01-05")) == ["adr1.md"]
    assert paths(search(engine, "reviewed:true")) == ["adr1.md"]
    assert sorted(paths(search(engine, "type:adr"))) == ["adr1.md", "adr2.md"]
    wrong = search(engine, "type:adr number:seven")
    assert wrong["hits"] == [] and "number:seven: expected an integer" in wrong["query"]["problems"][0]
    assert wrong["query"]["problems"][0].endswith("the filter matches nothing")
    kept = search(engine, "type:adr -number:seven")
    assert sorted(paths(kept)) == ["adr1.md", "adr2.md"]
    assert kept["query"]["problems"][0].startswith("-number:seven: expected an integer")
    assert kept["query"]["problems"][0].endswith("the filter excludes nothing")


def test_coerce_rules() -> None:
    assert coerce("12", "integer") == ["12"]
    assert coerce(True, "boolean") == ["true"]
    assert coerce("No", "boolean") == ["false"]
    assert coerce("a, b", "list") == ["a", "b"]
    assert coerce(["x", 2], "list") == ["x", "2"]
    for value, kind in (("1.5", "integer"), ("maybe", "boolean"), ("05/01/2024", "date"), (["a"], "string")):
        try:
            coerce(value, kind)
        except CoercionError:
            continue
        raise AssertionError(f"{value!r} as {kind} should not coerce")


def test_broken_schema_file_is_reported(engine, kb: Path, indexed) -> None:
    write(kb, "_schema/frontmatter.yaml", "common: {status: strnig}\n")
    write(kb, "a.md", "# A\n\ntext\n")
    indexed()
    problems = engine.workspace_status("kb")["problems"]
    assert problems[0]["kind"] == "schema" and "unknown type 'strnig'" in problems[0]["reason"]
    assert load_schema(kb).common == {}


def test_an_unclosed_quote_is_reported_at_its_own_line() -> None:
    """A new user's walk: `title: "unclosed` on line 2 was reported at the end of the block ("found unexpected end
    of stream"), where PyYAML noticed it, not where it is."""
    found = split_frontmatter(["---", 'title: "unclosed', "status: draft", "---", "# Body"])
    assert found.problem == ("malformed YAML frontmatter at line 2: while scanning a quoted scalar, found "
                             "unexpected end of stream (line 3)"), found.problem
    one_line = split_frontmatter(["---", "a: b: c", "---"])
    assert one_line.problem.startswith("malformed YAML frontmatter at line 2: mapping values are not allowed")
