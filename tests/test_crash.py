"""Kill the indexer and the embedder at random points (SIGKILL, many seeds): the database stays
consistent, and the next start finishes the work without redoing what was done."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from autodoc_core.engine import Engine
from autodoc_core.indexer import content_hash
from tests.conftest import PROJECT
from tests.model_servers import model_server

FILES = 300
SEEDS = range(6)


def write_corpus(root: Path, version: int, rng: random.Random, share: float = 1.0) -> None:
    """(Re)write ``share`` of the files; each has a few sections that name its version."""
    for i in range(FILES):
        if version and rng.random() > share:
            continue
        sections = "\n".join(section(version, i, j) for j in range(5))
        (root / f"n{i:03}.md").write_text(f"# Note {i}\n\n{sections}", encoding="utf-8")


def section(version: int, note: int, topic: int) -> str:
    words = " ".join(f"w{note * topic + k}" for k in range(40))
    return f"## Topic {topic}\n\nRevision {version} of note {note}, topic {topic}: {words}\n"


def autodoc(db: Path, method: str, params: list) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "autodoc_core.cli", "--db", str(db), "--call", method,
                             json.dumps(params)], cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def kill_after(proc: subprocess.Popen, seconds: float) -> bool:
    """SIGKILL after ``seconds`` unless it finished first; True when it was killed."""
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


def check_consistent(db: Path) -> apsw.Connection:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    ws_id = conn.execute("SELECT id FROM workspaces WHERE name = 'kb'").fetchone()[0]
    # Every chunk belongs to a document, carries that document's generation, and is in the FTS table.
    assert conn.execute(
        "SELECT COUNT(*) FROM chunks c LEFT JOIN documents d ON d.id = c.doc_id "
        "WHERE d.id IS NULL OR c.generation <> d.generation").fetchone()[0] == 0
    chunks = conn.execute("SELECT COUNT(*) FROM chunks WHERE ws_id = ?", (ws_id,)).fetchone()[0]
    fts = conn.execute(f"SELECT COUNT(*) FROM chunks_fts_{ws_id}").fetchone()[0]
    assert fts == chunks
    return conn


def files_done(conn: apsw.Connection, root: Path) -> int:
    """Documents whose stored content hash is the file's current one."""
    stored = dict(conn.execute("SELECT path, content_hash FROM documents"))
    return sum(stored.get(p.name) == content_hash(p.read_bytes())
               for p in root.glob("*.md"))


@pytest.mark.parametrize("seed", SEEDS)
def test_indexer_killed_at_a_random_point_resumes_exactly(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root, db = tmp_path / "kb", tmp_path / "autodoc.db"
    root.mkdir()
    write_corpus(root, 0, rng)
    with Engine(db) as engine:
        engine.workspace_add("kb", str(root))
        engine.workspace_configure("kb", {"embedder": {"provider": "none"}})
    killed = 0
    for version in (0, 1, 2):
        if version:
            write_corpus(root, version, rng, share=0.6)
        killed += kill_after(autodoc(db, "workspace.index", ["kb"]), rng.uniform(0.4, 2.5))
        conn = check_consistent(db)
        done = files_done(conn, root)
        conn.close()
        with Engine(db) as engine:
            report = engine.workspace_index("kb")
        assert report["added"] + report["changed"] == FILES - done  # nothing done twice
        conn = check_consistent(db)
        paths = [r[0] for r in conn.execute("SELECT path FROM documents ORDER BY path")]
        assert paths == sorted(p.name for p in root.glob("*.md"))
        assert files_done(conn, root) == FILES
        conn.close()
    assert killed or seed  # the first seed at least must have interrupted a run


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_embedder_killed_at_random_points_keeps_every_stored_vector(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root, db = tmp_path / "kb", tmp_path / "autodoc.db"
    root.mkdir()
    write_corpus(root, 0, rng)
    with model_server("tei") as server:
        server.behaviour.delay = 0.03
        with Engine(db) as engine:
            engine.workspace_add("kb", str(root))
            embedder = {"provider": "tei", "url": server.url, "retries": 0, "timeout": 5, "batch_size": 16}
            engine.workspace_configure("kb", {"embedder": embedder})
            engine.workspace_index("kb")
        counts = []
        for _ in range(4):
            kill_after(autodoc(db, "workspace.index", ["kb", {"wait": "semantic"}]), rng.uniform(0.5, 1.5))
            conn = check_consistent(db)
            counts.append(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            conn.close()
        with Engine(db) as engine:
            before = len(server.behaviour.requests)
            final = engine.workspace_index("kb", {"wait": "semantic"})["embedding"]
            sent = sum(len(r["body"]["inputs"]) for r in server.behaviour.requests[before:]
                       if r["path"] == "/embed" and r["body"]["inputs"] != ["dimension probe"])
    assert counts == sorted(counts)  # the embedded count only grows
    assert counts[0] < final["total"]  # the first run was killed before it finished
    assert final["embedded"] == final["total"] >= FILES * 5
    assert sent == final["total"] - counts[-1]  # only what was missing went to the model again
