"""Incremental indexing on real folders: add, edit, delete, rename, ignores, hostile files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from autodoc_core.errors import AutodocError
from autodoc_core.index.indexer import Indexer
from autodoc_core.parse.walk import markdown_files
from tests.conftest import paths, search, write


def chunk_rows(engine) -> dict[str, int]:
    with engine.store.snapshot() as conn:
        return dict(conn.execute("SELECT breadcrumb, id FROM chunks ORDER BY id"))


def test_second_run_reads_nothing_new(engine, kb: Path, indexed) -> None:
    write(kb, "a.md", "# A\n\nalpha\n")
    write(kb, "sub/b.markdown", "# B\n\nbeta\n")
    first = indexed()
    assert (first["added"], first["scanned"]) == (2, 2)
    second = indexed()
    assert (second["added"], second["changed"], second["unchanged"], second["chunks_written"]) == (0, 0, 2, 0)


def test_edit_rewrites_only_the_changed_chunk(engine, kb: Path, indexed) -> None:
    sections = "\n\n".join(f"## S{i}\n\nsection {i} text" for i in range(5))
    path = write(kb, "doc.md", f"# Doc\n\n{sections}\n")
    indexed()
    before = chunk_rows(engine)
    path.write_text(path.read_text().replace("section 2 text", "section 2 text, edited with zebra"))
    report = indexed()
    after = chunk_rows(engine)
    assert (report["changed"], report["chunks_written"], report["chunks_deleted"]) == (1, 1, 1)
    assert report["chunks_kept"] == 4
    for name in ("Doc › S0", "Doc › S1", "Doc › S3", "Doc › S4"):
        assert before[name] == after[name]
    assert before["Doc › S2"] != after["Doc › S2"]
    hit = search(engine, "zebra")["hits"][0]
    assert hit["breadcrumb"] == "Doc › S2"


def test_inserted_lines_move_unchanged_chunk_spans(engine, kb: Path, indexed) -> None:
    path = write(kb, "doc.md", "# Doc\n\n## One\n\nfirst\n\n## Two\n\nsecond unicorn\n")
    indexed()
    assert search(engine, "unicorn")["hits"][0]["line_start"] == 7
    path.write_text("# Doc\n\nnew intro\n\nmore intro\n\n## One\n\nfirst\n\n## Two\n\nsecond unicorn\n")
    indexed()
    hit = search(engine, "unicorn")["hits"][0]
    assert (hit["line_start"], hit["line_end"]) == (11, 13)
    assert path.read_bytes()[hit["byte_start"] : hit["byte_end"]] == b"## Two\n\nsecond unicorn"


def test_delete_and_rename(engine, kb: Path, indexed) -> None:
    write(kb, "keep.md", "# Keep\n\nkept words\n")
    doomed = write(kb, "doomed.md", "# Doomed\n\nwalrus\n")
    moving = write(kb, "old/name.md", "# Moving\n\ncapybara facts\n")
    indexed()
    ids_before = chunk_rows(engine)
    doomed.unlink()
    (kb / "new").mkdir()
    moving.rename(kb / "new" / "name.md")
    report = indexed()
    assert (report["deleted"], report["renamed"], report["added"]) == (1, 1, 0)
    assert search(engine, "walrus")["hits"] == []
    assert paths(search(engine, "capybara")) == ["new/name.md"]
    assert chunk_rows(engine)["Moving"] == ids_before["Moving"]  # chunks (and later vectors) reused


def test_a_file_moved_over_another_leaves_no_ghost(engine, kb: Path, indexed) -> None:
    """`mv draft.md b.md` where b.md exists: b.md changed, draft.md is gone. The move was paired as a
    rename of draft.md, which then was never deleted: search kept returning a file that did not exist."""
    write(kb, "draft.md", "# Draft\n\nokapi draft text\n")
    write(kb, "b.md", "# B\n\nold text of b\n")
    indexed()
    (kb / "draft.md").replace(kb / "b.md")
    report = indexed()
    assert (report["changed"], report["deleted"], report["renamed"]) == (1, 1, 0)
    assert paths(search(engine, "okapi")) == ["b.md"]
    assert engine.workspace_status("kb")["documents"] == 1


def test_a_same_size_rewrite_within_the_same_time_tick_is_found(engine, kb: Path, indexed) -> None:
    """A file rewritten to the same length in the same timestamp tick as the run that read it (coarse
    file-system clocks, or a fast editor) looked unchanged by size and time for good; a file written
    within 2 s of the last run is now read and compared by content."""
    path = write(kb, "a.md", "# A\n\nversion one\n")
    indexed()
    before = path.stat().st_mtime_ns
    path.write_text("# A\n\nversion two\n")
    os.utime(path, ns=(before, before))  # same size, same time: only the content tells
    assert indexed()["changed"] == 1
    assert paths(search(engine, "two")) == ["a.md"]


def test_generation_is_monotonic_per_change(engine, kb: Path, indexed) -> None:
    path = write(kb, "g.md", "# G\n\nv1 gnu\n")
    indexed()
    first = search(engine, "gnu")["hits"][0]["generation"]
    path.write_text("# G\n\nv2 gnu\n")
    indexed()
    assert search(engine, "gnu")["hits"][0]["generation"] > first


def test_hidden_ignored_and_node_modules_are_skipped(engine, kb: Path, indexed) -> None:
    write(kb, "visible.md", "# V\n\nseen\n")
    write(kb, ".git/x.md", "# G\n\nseen\n")
    write(kb, ".obsidian/y.md", "# O\n\nseen\n")
    write(kb, "node_modules/pkg/readme.md", "# N\n\nseen\n")
    write(kb, "build/out.md", "# B\n\nseen\n")
    write(kb, "drafts/keep.md", "# K\n\nseen\n")
    write(kb, "drafts/secret.md", "# S\n\nseen\n")
    write(kb, ".gitignore", "build/\n")
    write(kb, "drafts/.gitignore", "secret.md\n")
    write(kb, "notes.txt", "seen\n")
    write(kb.parent, "outside.md", "# Out\n\nseen\n")
    listed = [".git/x.md", ".obsidian/y.md", "node_modules/pkg/readme.md", "build/out.md", "drafts/secret.md",
              "notes.txt", "../outside.md", "drafts/../visible.md", "missing.md"]
    assert indexed(paths=listed)["scanned"] == 0  # a listed path obeys the same rules as the walk
    indexed()
    assert sorted(paths(search(engine, "seen", limit=50))) == ["drafts/keep.md", "visible.md"]


def test_gitignore_rules_decide_as_git_does(engine, kb: Path, indexed) -> None:
    """The last matching pattern wins, deeper .gitignore files after the ones above them, and a folder is
    not skipped whole when a negation may re-include something inside it. Each of these kept or dropped
    the wrong files before (a whitelist .gitignore indexed nothing below the top level)."""
    write(kb, ".gitignore", "notes/**\n!notes/README.md\n*.draft.md\n")
    write(kb, "notes/README.md", "# Readme\n\nseen\n")
    write(kb, "notes/private.md", "# Private\n\nseen\n")
    write(kb, "d/.gitignore", "!keep.draft.md\n")
    write(kb, "d/keep.draft.md", "# Keep\n\nseen\n")
    write(kb, "d/other.draft.md", "# Other\n\nseen\n")
    write(kb, "wl/.gitignore", "*\n!*/\n!*.md\n")
    write(kb, "wl/a/b.md", "# B\n\nseen\n")
    write(kb, "wl/a/c.txt", "seen\n")
    write(kb, "js/.gitignore", "dist/\n!.yarn/patches\n")  # a negation elsewhere does not open dist/
    write(kb, "js/dist/bundle.md", "# Bundle\n\nseen\n")
    expected = ["d/keep.draft.md", "notes/README.md", "wl/a/b.md"]
    listed = ["notes/README.md", "notes/private.md", "d/keep.draft.md", "d/other.draft.md", "wl/a/b.md"]
    assert indexed(paths=listed)["scanned"] == 3  # a listed path obeys the same rules as the walk
    indexed()
    assert sorted(paths(search(engine, "seen", limit=50))) == expected


def test_an_ignored_folder_is_skipped_unless_a_negation_reaches_inside(kb: Path, monkeypatch) -> None:
    """One `!` anywhere (GitHub's Node .gitignore has `!.yarn/patches`) used to have every ignored folder
    walked entry by entry at every scan; only a negation that can match inside a folder opens it."""
    write(kb, ".gitignore", "dist/\nnotes/**\n!.yarn/patches\n!notes/README.md\n")
    write(kb, "dist/bundle.md", "# Bundle\n")
    write(kb, "notes/README.md", "# Readme\n")
    listed: list[str] = []
    real_scandir = os.scandir

    def scandir(path):
        listed.append(os.path.relpath(path, kb))
        return real_scandir(path)

    monkeypatch.setattr("autodoc_core.parse.walk.os.scandir", scandir)
    assert [f.relpath for f in markdown_files(str(kb))] == ["notes/README.md"]
    assert "notes" in listed and "dist" not in listed


def test_symlinks_never_lead_out_of_the_root(engine, kb: Path, tmp_path: Path, indexed) -> None:
    outside = tmp_path / "outside"
    write(outside, "private.md", "# Private\n\nsecret ocelot\n")
    write(kb, "inner/real.md", "# Real\n\nocelot inside\n")
    os.symlink(outside, kb / "escape")
    os.symlink(outside / "private.md", kb / "private-link.md")
    os.symlink(kb / "inner", kb / "loop")  # inside the root: followed once, no cycle
    os.symlink(kb, kb / "inner" / "back")
    indexed()
    found = sorted(paths(search(engine, "ocelot", limit=50)))
    assert "escape/private.md" not in found and "private-link.md" not in found
    assert "inner/real.md" in found


def test_a_file_reached_through_symlinks_is_indexed_once(engine, kb: Path, indexed) -> None:
    """A linked folder and a linked file inside the root led to the same file: it was indexed (and found)
    under every path. Now once, under its own path, or under the first link when only links reach it (a
    hidden folder); a save through a link re-indexes the real file."""
    write(kb, "inner/real.md", "# Real\n\nocelot inside\n")
    write(kb, ".drafts/draft.md", "# Draft\n\nocelot draft\n")
    os.symlink(kb / "inner", kb / "alias")
    os.symlink(kb / "inner" / "real.md", kb / "also.md")
    os.symlink(kb / ".drafts", kb / "drafts-a")
    os.symlink(kb / ".drafts", kb / "drafts-b")
    indexed()
    assert sorted(paths(search(engine, "ocelot", limit=50))) == ["drafts-a/draft.md", "inner/real.md"]
    write(kb, "inner/real.md", "# Real\n\nocelot inside, now with a tapir\n")
    report = engine.workspace_index("kb", {"paths": ["alias/real.md"]})
    assert (report["changed"], report["added"], report["deleted"]) == (1, 0, 0)
    assert paths(search(engine, "tapir")) == ["inner/real.md"]


def test_binary_huge_and_invalid_utf8_files(engine, kb: Path, indexed) -> None:
    write(kb, "binary.md", b"\x00\x01\x02PNG" * 100)
    huge = kb / "huge.md"
    with open(huge, "wb") as handle:
        handle.write(b"# Huge\n\n")
        handle.seek(50 * 1024 * 1024)
        handle.write(b"end\n")
    write(kb, "latin1.md", "# Caf\xe9\n\ncr\xe8me br\xfbl\xe9e with okapi\n".encode("latin-1"))
    write(kb, "fine.md", "# Fine\n\nokapi\n")
    report = indexed()
    reasons = {p["path"]: p["reason"] for p in report["problems"]}
    assert "binary" in reasons["binary.md"]
    assert "over the 10 MB limit" in reasons["huge.md"]
    assert "invalid UTF-8" in reasons["latin1.md"]
    assert sorted(paths(search(engine, "okapi"))) == ["fine.md", "latin1.md"]
    hit = next(h for h in search(engine, "okapi")["hits"] if h["path"] == "latin1.md")
    assert (hit["line_start"], hit["line_end"]) == (1, 3)
    status = engine.workspace_status("kb")
    assert {p["path"] for p in status["problems"]} >= {"binary.md", "huge.md", "latin1.md"}
    assert status["documents"] == 2


def test_a_root_that_cannot_be_listed_changes_nothing(engine, kb: Path, tmp_path: Path, indexed) -> None:
    """A drive not mounted or a root moved away walked as an empty folder: every document was deleted
    (and the start-up scan runs on every known workspace). Now the run stops, saying why."""
    write(kb, "a.md", "# A\n\nokapi\n")
    write(kb, "sub/b.md", "# B\n\nokapi too\n")
    indexed()
    kb.rename(tmp_path / "unmounted")
    with pytest.raises(AutodocError) as caught:
        engine.workspace_index("kb")
    assert caught.value.code == -32064 and "cannot list the workspace root" in caught.value.reason
    with pytest.raises(AutodocError) as caught:  # one path (a save, Enter on a hit): it deleted the document
        engine.workspace_index("kb", {"paths": ["a.md"]})
    assert caught.value.code == -32064 and "is not a folder now" in caught.value.reason
    assert sorted(paths(search(engine, "okapi"))) == ["a.md", "sub/b.md"]
    (tmp_path / "unmounted").rename(kb)
    again = indexed()
    assert (again["deleted"], again["unchanged"]) == (0, 2)
    kb.rename(tmp_path / "unmounted")
    kb.mkdir()  # a mount point: the empty folder a drive not mounted leaves
    with pytest.raises(AutodocError) as caught:
        engine.workspace_index("kb")
    assert caught.value.code == -32064 and "is empty but the index holds 2 documents" in caught.value.reason
    assert sorted(paths(search(engine, "okapi"))) == ["a.md", "sub/b.md"]


def test_a_folder_that_cannot_be_listed_keeps_its_documents(engine, kb: Path, indexed, monkeypatch) -> None:
    """A subfolder the walk cannot list (permissions, an I/O error) is not an empty one."""
    write(kb, "a.md", "# A\n\nokapi\n")
    write(kb, "private/b.md", "# B\n\nokapi too\n")
    indexed()
    real_scandir = os.scandir

    def scandir(path):  # the operating system refusing one folder (root ignores chmod, so fake the refusal)
        if os.path.basename(str(path)) == "private":
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr("autodoc_core.parse.walk.os.scandir", scandir)
    report = indexed()
    assert report["deleted"] == 0
    assert {"path": "private/", "kind": "skipped",
            "reason": "the folder cannot be listed; its documents stay as last indexed"} in report["problems"]
    assert sorted(paths(search(engine, "okapi"))) == ["a.md", "private/b.md"]


@pytest.mark.skipif(sys.getfilesystemencoding() != "utf-8", reason="the file system encoding is not UTF-8")
def test_a_file_name_that_is_not_utf8_is_reported_and_the_rest_indexed(engine, kb: Path, indexed) -> None:
    """A name from an old archive (Latin-1 bytes) reached the database as unencodable text: the batch rolled
    back and every run stopped there, leaving the files after it unindexed."""
    write(kb, "a.md", "# A\n\nokapi\n")
    fd = os.open(os.fsencode(kb) + b"/caf\xe9.md", os.O_WRONLY | os.O_CREAT)
    os.write(fd, b"# Cafe\n\nokapi latin\n")
    os.close(fd)
    write(kb, "z.md", "# Z\n\nokapi last\n")
    report = indexed()
    assert {"path": "caf\\xe9.md", "kind": "skipped",
            "reason": "the name is not valid UTF-8; rename it to index what it holds"} in report["problems"]
    assert sorted(paths(search(engine, "okapi"))) == ["a.md", "z.md"]


def test_file_deleted_mid_index_is_reported_and_the_rest_indexed(engine, kb: Path) -> None:
    for name in "abcde":
        write(kb, f"{name}.md", f"# {name}\n\nshared lemur {name}\n")
    engine.workspace_add("kb", str(kb))
    ws = engine._workspace("kb")

    def delete_a_later_file(relpath: str) -> None:
        if relpath == "a.md":
            (kb / "d.md").unlink()

    report = Indexer(engine.store, ws, on_file=delete_a_later_file).run().as_dict()
    assert report["added"] == 4
    assert any(p["path"] == "d.md" and "disappeared" in p["reason"] for p in report["problems"])
    assert sorted(paths(search(engine, "lemur"))) == ["a.md", "b.md", "c.md", "e.md"]


def test_fixed_file_clears_its_problem(engine, kb: Path, indexed) -> None:
    path = write(kb, "x.md", "---\ntitle: [bad\n---\n# X\n\ntext\n")
    indexed()
    assert engine.workspace_status("kb")["problems"]
    path.write_text("---\ntitle: good\n---\n# X\n\ntext\n")
    indexed()
    assert engine.workspace_status("kb")["problems"] == []


def test_problems_leave_with_their_files(engine, kb: Path, indexed) -> None:
    write(kb, "fine.md", "# Fine\n")  # not an empty root afterwards: that one is refused (a mount point?)
    binary = write(kb, "binary.md", b"\x00\x01" * 10)
    warned = write(kb, "warned.md", "---\ntitle: [bad\n---\n# W\n\ntext\n")
    indexed()
    assert {p["path"] for p in engine.workspace_status("kb")["problems"]} == {"binary.md", "warned.md"}
    binary.unlink()
    warned.unlink()
    indexed()
    assert engine.workspace_status("kb")["problems"] == []


def test_only_paths_reindexes_just_those(engine, kb: Path, indexed) -> None:
    write(kb, "a.md", "# A\n\none\n")
    write(kb, "b.md", "# B\n\ntwo\n")
    indexed()
    write(kb, "a.md", "# A\n\none changed\n")
    write(kb, "b.md", "# B\n\ntwo changed\n")
    report = indexed(paths=["a.md"])
    assert (report["scanned"], report["changed"]) == (1, 1)
    assert paths(search(engine, "changed")) == ["a.md"]  # b.md keeps its old text until indexed
    assert indexed(paths="b.md")["changed"] == 1  # one path as a string, as search's paths take it


def test_section_size_setting_rechunks(engine, kb: Path, indexed) -> None:
    write(kb, "long.md", "# Long\n\n" + "\n\n".join("para " + "word " * 50 for _ in range(6)) + "\n")
    indexed()
    before = engine.workspace_status("kb")["chunks"]
    engine.workspace_section_size("kb", 64)
    report = indexed()
    assert report["changed"] == 1
    assert engine.workspace_status("kb")["chunks"] > before


@pytest.mark.parametrize("bad", [{"section_tokens": 5}, {"nope": 1}, {"abstract_chunk": "yes"}, []])
def test_configure_rejects_bad_settings(engine, kb: Path, bad) -> None:
    from autodoc_core.errors import AutodocError

    engine.workspace_add("kb", str(kb))
    with pytest.raises(AutodocError) as caught:
        engine.workspace_configure("kb", bad)
    assert caught.value.code == -32602


def test_large_runs_parse_in_worker_processes(engine, kb: Path, indexed) -> None:
    from autodoc_core.index.parsing import PARALLEL_PARSE_MIN

    for i in range(PARALLEL_PARSE_MIN + 10):
        write(kb, f"bulk/n{i:03d}.md", f"# Note {i}\n\n## Body\n\nterm{i} and `sym_{i}` shared heron\n")
    report = indexed()
    assert report["added"] == PARALLEL_PARSE_MIN + 10
    assert len(paths(search(engine, "heron", limit=200))) == 200
    assert paths(search(engine, "sym_123"))[0] == "bulk/n123.md"  # symbols made in the workers arrive too


def test_status_shows_an_index_run_under_way(engine, kb: Path) -> None:
    """Held at its 120th document (a checkpoint hold, not a race), a run of 300 new files shows in
    workspace.status as writing 120 of 300; when it ends, the status says no run is under way."""
    import threading

    from autodoc_core.index import checkpoints

    for i in range(300):
        write(kb, f"n{i:03}.md", f"# Note {i}\n\nbody {i}\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    assert engine.workspace_status("kb")["indexing"] is None
    with checkpoints.Hold("index.document", 120) as hold:
        run = threading.Thread(target=engine.workspace_index, args=("kb",))
        run.start()
        assert hold.arrived.wait(timeout=120)
        during = engine.workspace_status("kb")["indexing"]
        hold.release.set()
        run.join(timeout=120)
    assert (during["phase"], during["scanned"], during["to_write"], during["written"]) == ("writing", 300, 300, 120)
    assert engine.workspace_status("kb")["indexing"] is None


def test_settings_changed_by_two_processes_while_a_run_writes_are_both_kept(engine, kb: Path, tmp_path: Path) -> None:
    """Two other processes change different settings while an index run holds the write: each read the
    configuration before it waited, and the second write put back the value the first had changed."""
    import threading

    from autodoc_core.index import checkpoints
    from autodoc_core.service.engine import Engine

    for i in range(20):
        write(kb, f"n{i:02}.md", f"# Note {i}\n\nbody {i}\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_configure("kb", {"embedder": "none"})
    others = [Engine(tmp_path / "autodoc.db"), Engine(tmp_path / "autodoc.db")]
    try:
        with checkpoints.Hold("index.document", 10) as hold:
            run = threading.Thread(target=engine.workspace_index, args=("kb",))
            run.start()
            assert hold.arrived.wait(timeout=120)
            changes = [threading.Thread(target=other.workspace_configure, args=("kb", change))
                       for other, change in zip(others, ({"fusion": "rrf"}, {"semantic_deadline": 7}), strict=True)]
            for change in changes:
                change.start()
            hold.release.set()
            run.join(timeout=120)
            for change in changes:
                change.join(timeout=120)
        settings = engine.workspace_status("kb")["settings"]
        assert (settings["fusion"], settings["semantic_deadline"]) == ("rrf", 7)
    finally:
        for other in others:
            other.close()
