"""The SQLite file: location, WAL, schema versions, snapshot isolation, the change log."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import apsw
import pytest

from autodoc_core.errors import AutodocError
from autodoc_core.service.engine import Engine
from autodoc_core.store.changes import KEEP_ROWS as CHANGE_LOG_KEEP_ROWS
from autodoc_core.store.database import Store, default_db_path
from autodoc_core.store.migrations import SCHEMA_VERSION
from tests.conftest import write


def test_default_path_follows_xdg_and_env(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AUTODOC_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_db_path() == tmp_path / "data" / "autodoc" / "autodoc.db"
    monkeypatch.setenv("AUTODOC_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"


def test_wal_mode_and_schema_version(tmp_path: Path) -> None:
    store = Store(tmp_path / "a.db")
    store.close()
    conn = apsw.Connection(str(tmp_path / "a.db"))
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_newer_schema_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    Store(tmp_path / "a.db").close()
    conn = apsw.Connection(str(tmp_path / "a.db"))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(AutodocError) as caught:
        Store(tmp_path / "a.db")
    assert caught.value.code == -32063
    assert "newer than this autodoc" in caught.value.reason


def test_reopening_keeps_data(tmp_path: Path, kb: Path) -> None:
    write(kb, "a.md", "# A\n\npersistent heron\n")
    first = Engine(tmp_path / "a.db")
    first.workspace_add("kb", str(kb))
    first.workspace_index("kb")
    first.close()
    second = Engine(tmp_path / "a.db")
    assert second.search_query("kb", "heron", None).to_wire()["hits"][0]["path"] == "a.md"
    second.close()


def test_readers_never_see_a_mix_of_generations(engine: Engine, kb: Path) -> None:
    """A reader loops over searches while the writer re-indexes the same document again and again."""
    sections = lambda v: "\n\n".join(f"## Part {i}\n\nmarker version{v} common kiwi" for i in range(6))  # noqa: E731
    path = write(kb, "doc.md", f"# Doc\n\n{sections(0)}\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb")
    stop = threading.Event()
    observed = threading.Condition()
    observations: list[tuple[set, set]] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                hits = engine.search_query("kb", "kiwi", {"limit": 50, "stages": ["lexical"]}).to_wire()["hits"]
                with engine.store.snapshot() as conn:
                    rows = conn.execute("SELECT body, generation FROM chunks").fetchall()
                versions = {b.split("version")[1].split()[0] for b, _ in rows}
                with observed:
                    observations.append(({h["generation"] for h in hits}, versions))
                    observed.notify_all()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    for version in range(1, 40):
        path.write_text(f"# Doc\n\n{sections(version)}\n")
        engine.workspace_index("kb")
        with observed:  # at least one search between writes, however the threads are scheduled
            seen = len(observations)
            assert observed.wait_for(lambda seen=seen: len(observations) > seen or errors, timeout=60)
    stop.set()
    thread.join()
    assert not errors
    assert len(observations) >= 39
    for generations, versions in observations:
        assert len(generations) <= 1
        assert len(versions) == 1


def test_change_log_feeds_incremental_sync(engine: Engine, kb: Path) -> None:
    engine.workspace_add("kb", str(kb))
    write(kb, "a.md", "# A\n\none\n")
    write(kb, "b.md", "# B\n\ntwo\n")
    engine.workspace_index("kb")
    first = engine.changes_since("kb", None)
    assert sorted((c["op"], c["path"]) for c in first["changes"]) == [("added", "a.md"), ("added", "b.md")]
    write(kb, "a.md", "# A\n\none more\n")
    (kb / "b.md").unlink()
    engine.workspace_index("kb")
    second = engine.changes_since("kb", first["cursor"])
    assert [(c["op"], c["path"]) for c in second["changes"]] == [("changed", "a.md"), ("deleted", "b.md")]
    assert second["reset"] is False
    assert engine.changes_since("kb", second["cursor"])["changes"] == []
    with pytest.raises(AutodocError):
        engine.changes_since("kb", "yesterday")


def test_change_log_keeps_seven_days_and_100k_rows(engine: Engine, kb: Path) -> None:
    engine.workspace_add("kb", str(kb))
    ws = engine._workspace("kb")
    old = time.time() - 8 * 24 * 3600
    with engine.store.write() as conn:
        conn.executemany(
            "INSERT INTO changes(ws_id, op, path, generation, at) VALUES (?, 'changed', 'x.md', 1, ?)",
            [(ws.id, old)] * (CHANGE_LOG_KEEP_ROWS + 50),
        )
    write(kb, "a.md", "# A\n\nfresh\n")
    engine.workspace_index("kb")
    with engine.store.snapshot() as conn:
        count = conn.execute("SELECT COUNT(*) FROM changes WHERE ws_id = ?", (ws.id,)).fetchone()[0]
    assert count == CHANGE_LOG_KEEP_ROWS  # old rows beyond 100,000 pruned, the newest kept
    page = engine.changes_since("kb", 1)
    assert page["reset"] is True and page["more"] is True


def test_recent_changes_are_never_pruned(engine: Engine, kb: Path) -> None:
    engine.workspace_add("kb", str(kb))
    ws = engine._workspace("kb")
    with engine.store.write() as conn:
        conn.executemany(
            "INSERT INTO changes(ws_id, op, path, generation, at) VALUES (?, 'changed', 'x.md', 1, ?)",
            [(ws.id, time.time() - 3600)] * (CHANGE_LOG_KEEP_ROWS + 10),
        )
    write(kb, "a.md", "# A\n\nfresh\n")
    engine.workspace_index("kb")
    with engine.store.snapshot() as conn:
        count = conn.execute("SELECT COUNT(*) FROM changes WHERE ws_id = ?", (ws.id,)).fetchone()[0]
    assert count == CHANGE_LOG_KEEP_ROWS + 11


def test_old_schema_is_migrated_in_place(tmp_path: Path, kb: Path) -> None:
    from autodoc_core.store.migrations import MIGRATIONS

    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    conn.execute(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO workspaces(name, root) VALUES ('kb', ?)", (str(kb),))
    conn.close()
    store = Store(path)
    with store.snapshot() as reader:
        assert reader.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert reader.execute("SELECT name, vector_epoch FROM workspaces").fetchall() == [("kb", 0)]
        assert reader.execute("SELECT COUNT(*) FROM symbols").fetchone()[0] == 0
    store.close()


def test_a_thread_that_ended_leaves_no_open_reader(tmp_path: Path) -> None:
    """Worker pools end idle threads and start new ones (the MCP server runs each tool call on an anyio
    worker): each thread's read connection used to stay open, with its page cache, until the process
    ended. Counted as this process's open file descriptors on the database file."""
    import os

    store = Store(tmp_path / "a.db")
    database = str((tmp_path / "a.db").resolve())

    def open_on_database() -> int:
        fds = os.listdir("/proc/self/fd")
        return sum(1 for fd in fds if os.path.realpath(f"/proc/self/fd/{fd}") == database)

    def read_once() -> None:
        with store.snapshot() as conn:
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchall()

    def thirty_workers() -> int:
        for _ in range(30):
            worker = threading.Thread(target=read_once)
            worker.start()
            worker.join()
        return open_on_database()

    read_once()
    before = open_on_database()
    # SQLite keeps a closed connection's descriptor while another connection of the process holds a
    # lock on the file, and reuses it for the next open: a few, not one per thread.
    after_thirty = thirty_workers()
    assert after_thirty <= before + 3
    assert thirty_workers() == after_thirty
    store.close()


def test_a_database_deleted_while_open_is_said_not_written_into(tmp_path: Path, kb: Path) -> None:
    """`rm autodoc.db` while an editor runs: its writes went on into the unlinked file (lost at exit) while a
    new process created and used another one. The next write says what happened."""
    write(kb, "a.md", "# A\n\ntext\n")
    db = tmp_path / "a.db"
    with Engine(db) as engine:
        engine.workspace_add("kb", str(kb))
        engine.workspace_index("kb")
        for leftover in tmp_path.glob("a.db*"):
            leftover.unlink()
        with pytest.raises(AutodocError) as caught:
            engine.workspace_configure("kb", {"fusion": "rrf"})
    assert caught.value.code == -32064 and "was deleted or replaced while this process had it open" in \
        caught.value.reason


def test_an_index_run_gives_back_the_wal_space(engine: Engine, kb: Path, tmp_path: Path) -> None:
    """SQLite keeps the WAL at its largest size until the last connection closes; an index run empties it."""
    for i in range(40):
        write(kb, f"note{i}.md", f"# Note {i}\n\n" + f"words of note {i} " * 400 + "\n")
    engine.workspace_add("kb", str(kb))
    engine.workspace_index("kb")
    assert (tmp_path / "autodoc.db-wal").stat().st_size == 0
    assert engine.search_query("kb", "note 7", None).to_wire()["hits"]


def test_the_wal_is_cut_when_sqlite_starts_it_over(tmp_path: Path) -> None:
    """A reader keeps the run's end from emptying the WAL; the next write after a checkpoint cuts it down."""
    store = Store(tmp_path / "a.db")
    with store.write() as conn:
        conn.execute("CREATE TABLE blobs(data BLOB)")
    reader = apsw.Connection(str(tmp_path / "a.db"))
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM sqlite_schema").fetchall()  # holds a snapshot: no checkpoint can finish
    with store.write() as conn:
        for _ in range(300):
            conn.execute("INSERT INTO blobs VALUES (randomblob(50000))")
    store.shrink_wal()
    wal = tmp_path / "a.db-wal"
    assert wal.stat().st_size > 10_000_000  # the reader needs the old pages: left as is, no error
    reader.execute("COMMIT")
    for _ in range(2):  # the first commit's checkpoint finishes now; the second write starts the WAL over
        with store.write() as conn:
            conn.execute("INSERT INTO blobs VALUES (1)")
    assert wal.stat().st_size <= 4 * 1024 * 1024
    store.close()


def _kb_of_two(engine: Engine, kb: Path, other: Path) -> None:
    for root, name in ((kb, "kb"), (other, "other")):
        write(root, "a.md", "---\ntags: [alpha]\nstatus: draft\n---\n# Alpha\n\nSee [b](b.md). `reclaim_batch()` ok.\n")
        write(root, "b.md", "# Beta\n\nalpha words here, commit 1a2b3c4d5e.\n")
        engine.workspace_add(name, str(root))
        engine.workspace_index(name)


def test_removing_a_workspace_leaves_no_row_of_it_in_any_table(engine: Engine, kb: Path, tmp_path: Path) -> None:
    """Each family of tables deletes its own rows: a table added later with a ws_id column and no owner fails
    here."""
    _kb_of_two(engine, kb, tmp_path / "other")
    with engine.store.snapshot() as conn:
        ws_ids = dict(conn.execute("SELECT name, id FROM workspaces"))
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
                  if any(column[1] == "ws_id" for column in conn.execute(f"PRAGMA table_info({name})"))]
    assert {"documents", "chunks", "symbols", "facets", "doc_keys", "links", "changes"} <= set(tables)
    engine.workspace_remove("kb")
    with engine.store.snapshot() as conn:
        left = {table: conn.execute(f"SELECT COUNT(*) FROM {table} WHERE ws_id = ?", (ws_ids["kb"],)).fetchone()[0]
                for table in tables}
        kept = conn.execute("SELECT COUNT(*) FROM chunks WHERE ws_id = ?", (ws_ids["other"],)).fetchone()[0]
        fts = {name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'chunks_fts_%'")}
    assert left == dict.fromkeys(tables, 0)
    assert kept > 0
    assert f"chunks_fts_{ws_ids['kb']}" not in fts and f"chunks_fts_{ws_ids['other']}" in fts


def test_each_filter_clause_carries_its_own_parameters(engine: Engine, kb: Path, tmp_path: Path) -> None:
    """A chunk clause with a parameter beside document clauses: the facet-only listing and the semantic
    allow-list take the document clauses with their parameters alone (the chunk clause's were once passed
    to them, which bound a value to the wrong mark)."""
    from autodoc_core.rank.hits import document_hits
    from autodoc_core.retrieve.filters import allowed_documents
    from autodoc_core.store import chunks
    from autodoc_core.store.filters import Clause, Filters, facet_clause, path_clause

    _kb_of_two(engine, kb, tmp_path / "other")
    ws = engine._workspace("kb")
    filters = Filters(document=[facet_clause(ws.id, "tag", ["alpha"], False), path_clause(["a.md"])],
                      chunk=[Clause("c.kind <> ?", ("abstract",))])
    with engine.store.snapshot() as conn:
        allowed = allowed_documents(conn, ws.id, filters)
        listed = [hit.path for hit in document_hits(conn, ws.id, filters.document, 10)]
        found = chunks.search(conn, ws.id, '"alpha"', (3.0, 1.0), filters, 10)
        everywhere = chunks.search(conn, ws.id, '"alpha"', (3.0, 1.0), Filters(), 10)
        a_id = conn.execute("SELECT id FROM documents WHERE ws_id = ? AND path = 'a.md'", (ws.id,)).fetchone()[0]
        found_docs = {conn.execute("SELECT doc_id FROM chunks WHERE id = ?", (chunk_id,)).fetchone()[0]
                      for chunk_id, _ in found}
    assert allowed is not None and allowed.tolist() == [a_id]
    assert listed == ["a.md"]
    assert found and found_docs == {a_id}
    assert len(everywhere) > len(found)  # b.md holds the word too: the filters, not the words, left it out
