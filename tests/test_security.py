"""Nothing outside a workspace root is read, credentials never leak, YAML is data only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from autodoc_core.errors import AutodocError
from autodoc_core.index.indexer import Indexer
from autodoc_core.parse.walk import OutsideRoot, open_inside
from tests.conftest import database_bytes, search, write
from tests.model_servers import Behaviour, model_server

SECRET = "sk-echoed-back-7781"


def test_a_file_swapped_for_an_outside_symlink_after_the_walk_is_not_read(engine, kb: Path, tmp_path: Path) -> None:
    write(tmp_path / "outside", "private.md", "# Private\n\nsecret ocelot\n")
    write(kb, "note.md", "# Note\n\nplain words\n")
    engine.workspace_add("kb", str(kb))
    ws = engine._workspace("kb")

    def swap(relpath: str) -> None:  # runs between the walk and the read
        os.remove(kb / relpath)
        os.symlink(tmp_path / "outside" / "private.md", kb / relpath)

    with engine.store.exclusive():
        report = Indexer(engine.store, ws, on_file=swap).run()
    assert report.added == 0 and report.skipped == 1
    assert "outside the workspace root" in report.problems[0]["reason"]
    engine.store.close()
    assert b"ocelot" not in database_bytes(tmp_path)


def test_open_inside_checks_the_file_it_opened(tmp_path: Path) -> None:
    write(tmp_path, "outside.md", "x")
    write(tmp_path / "root", "in.md", "y")
    os.symlink(tmp_path / "outside.md", tmp_path / "root" / "out.md")
    with open_inside(str(tmp_path / "root"), str(tmp_path / "root" / "in.md")) as handle:
        assert handle.read() == b"y"
    with pytest.raises(OutsideRoot):
        open_inside(str(tmp_path / "root"), str(tmp_path / "root" / "out.md"))


def test_links_to_absolute_and_parent_paths_are_never_followed(engine, kb: Path, tmp_path: Path, indexed) -> None:
    write(tmp_path, "outside.md", "# Outside\n\nsecret ocelot\n")
    links = "[a](../outside.md), [b](/etc/passwd), [c](file:///etc/shadow) and [[../outside]]"
    write(kb, "note.md", f"# Note\n\nSee {links}.\n")
    indexed()
    assert search(engine, "ocelot")["hits"] == []
    with engine.store.snapshot() as conn:
        assert [r[0] for r in conn.execute("SELECT path FROM documents")] == ["note.md"]
    engine.store.close()
    assert b"ocelot" not in database_bytes(tmp_path)


@pytest.mark.parametrize(("path", "code"), [
    ("../outside.md", -32061), ("/etc/passwd", -32061), ("a/../../outside.md", -32061), ("x\x00.md", -32061),
    ("~/x.md", -32062),  # no shell here: a folder named "~" inside the root, which does not exist
])
def test_doc_read_stays_inside(engine, kb: Path, tmp_path: Path, indexed, path: str, code: int) -> None:
    write(tmp_path, "outside.md", "# Outside\n")  # exists: "outside the root" must win over "not found"
    indexed()
    with pytest.raises(AutodocError) as caught:
        engine.doc_read("kb", path)
    assert caught.value.code == code


def test_credentials_echoed_by_a_server_never_reach_errors_status_or_the_database(engine, kb: Path, tmp_path: Path,
                                                                                  monkeypatch) -> None:
    monkeypatch.setenv("MY_EMBED_KEY", SECRET)
    write(kb, "note.md", "# Note\n\nsockets and packets\n")
    engine.workspace_add("kb", str(kb))
    with model_server("openai", Behaviour(fail_status=[401] * 10, echo_auth=True)) as server:
        engine.workspace_configure("kb", {"embedder": {"provider": "openai", "url": server.url, "model": "toy",
                                                        "api_key_env": "MY_EMBED_KEY", "retries": 0}})
        with pytest.raises(AutodocError) as caught:
            engine.workspace_index("kb", {"wait": "semantic"})
        status = engine.workspace_status("kb")
        answer = search(engine, "sockets")
    assert "HTTP 401" in caught.value.reason and "[redacted]" in caught.value.reason
    seen = repr(caught.value.to_rpc()) + repr(status) + repr(answer)
    assert SECRET not in seen
    engine.store.close()
    assert SECRET.encode() not in database_bytes(tmp_path)


def test_yaml_tags_that_build_objects_are_refused(engine, kb: Path, tmp_path: Path, indexed) -> None:
    marker = tmp_path / "pwned"
    write(kb, "evil.md", f'---\ntitle: !!python/object/apply:os.system ["touch {marker}"]\n---\n# Evil\n\nbody\n')
    report = indexed()
    assert not marker.exists()
    assert report["added"] == 1  # the body is still indexed
    problems = engine.workspace_status("kb")["problems"]
    assert any(p["path"] == "evil.md" and "malformed YAML frontmatter" in p["reason"] for p in problems)


def test_schema_and_gitignore_symlinked_outside_the_root_are_not_read(engine, kb: Path, tmp_path: Path,
                                                                      indexed) -> None:
    """No file outside a root is read: the facet schema and a .gitignore were opened wherever their
    symlinks led (a schema's YAML errors quote the file they read)."""
    write(tmp_path, "outside/schema.yaml", "common:\n  secret_field: string\n")
    write(tmp_path, "outside/ignore", "*.md\n")
    (kb / "_schema").mkdir()
    (kb / "_schema" / "frontmatter.yaml").symlink_to(tmp_path / "outside" / "schema.yaml")
    (kb / ".gitignore").symlink_to(tmp_path / "outside" / "ignore")
    write(kb, "note.md", "# Note\n\nokapi\n")
    report = indexed()
    assert report["added"] == 1  # the outside ignore rules were not applied
    assert engine.workspace_status("kb")["schema"]["common"] == {}  # nor the outside schema read


def test_doc_texts_gives_what_doc_read_gives_each_file_read_once(engine, kb: Path, tmp_path: Path, indexed) -> None:
    """The MCP's hit texts: every file's lines and its changed-since-indexed flag as doc_read says them (a deleted
    one's from the index), or the reason doc_read refuses it (outside the root), for all of a search's files in
    one call."""
    write(kb, "a.md", "# A\n\nalpha\r\nbeta\n")
    write(kb, "b.md", "# B\n\ngamma\n")
    write(kb, "gone.md", "# Gone\n")
    write(tmp_path, "outside.md", "# Outside\n")
    indexed()
    write(kb, "b.md", "# B\n\ngamma, edited\n")
    (kb / "gone.md").unlink()
    paths = ["a.md", "b.md", "a.md", "gone.md", "../outside.md"]
    texts = engine.doc_texts("kb", paths)
    assert list(texts) == ["a.md", "b.md", "gone.md", "../outside.md"]
    for path in ("a.md", "b.md"):
        read = engine.doc_read("kb", path)
        assert texts[path].lines == read["text"].split("\n")
        assert texts[path].changed_since_indexed == read["changed_since_indexed"]
    assert texts["b.md"].changed_since_indexed and not texts["a.md"].changed_since_indexed
    # deleted since it was indexed: the index's copy, in both, said to be one
    gone = engine.doc_read("kb", "gone.md")
    assert texts["gone.md"].lines == gone["text"].split("\n") == ["# Gone"]
    assert texts["gone.md"].source == gone["text_source"] and "is gone" in gone["text_source"]
    with pytest.raises(AutodocError) as refused:
        engine.doc_read("kb", "../outside.md")
    assert texts["../outside.md"] == refused.value.reason
