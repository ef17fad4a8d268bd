"""Kill the indexer and the embedder at random points in their work (SIGKILL, many seeds): the
database stays consistent, and the next start finishes the work without redoing what was done.

The kill comes from inside the process at a named checkpoint (``AUTODOC_TEST_KILL_AT``, see
``autodoc_core.index.checkpoints``), so every seed interrupts every run at the place it picked, on a fast
machine or a loaded one. Broken on purpose to check the tests: writing each document in its own
transaction outside the batch makes ``check_consistent`` or "nothing done twice" fail, and removing
the parse workers' parent watch leaves workers behind in the orphan test.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from autodoc_core.index.indexer import BATCH_SIZE, content_hash
from autodoc_core.index.vectors import MODEL_CHECK_TEXT
from autodoc_core.service.engine import Engine
from tests.conftest import PROJECT, wait_until
from tests.model_servers import model_server

FILES = 300
SEEDS = range(6)
RUN_SECONDS = 120  # a run that neither finishes nor reaches its checkpoint by then has hung


def write_corpus(root: Path, version: int, rng: random.Random, share: float = 1.0) -> int:
    """(Re)write ``share`` of the files; each has a few sections that name its version. Returns how
    many files were written."""
    written = 0
    for i in range(FILES):
        if version and rng.random() > share:
            continue
        sections = "\n".join(section(version, i, j) for j in range(5))
        link = f"See [the next note](n{(i + 1) % FILES:03}.md).\n\n"
        (root / f"n{i:03}.md").write_text(f"# Note {i}\n\n{link}{sections}", encoding="utf-8")
        written += 1
    return written


def section(version: int, note: int, topic: int) -> str:
    words = " ".join(f"w{note * topic + k}" for k in range(40))
    return f"## Topic {topic}\n\nRevision {version} of note {note}, topic {topic}: {words}\n"


def autodoc(db: Path, method: str, params: list, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "autodoc_core", "--db", str(db), "--call", method,
                             json.dumps(params)], cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})})


def killed_at(db: Path, method: str, params: list, checkpoint: str, count: int) -> None:
    """Run ``method`` in a process that SIGKILLs itself the ``count``-th time it reaches ``checkpoint``;
    fails unless it died exactly so (a clean exit means the checkpoint was never reached, any other
    exit is a crash)."""
    proc = autodoc(db, method, params, {"AUTODOC_TEST_KILL_AT": f"{checkpoint}:{count}"})
    _, stderr = proc.communicate(timeout=RUN_SECONDS)
    assert proc.returncode == -signal.SIGKILL, (checkpoint, count, proc.returncode, stderr.decode()[-2000:])


def index_kill_point(rng: random.Random, to_write: int, first: bool) -> tuple[str, int]:
    """A random place in an index run that writes ``to_write`` documents: inside a batch's
    transaction, right after a batch's commit, or (in the first run, whose new links need
    resolving) before link resolution."""
    places = [("index.document", rng.randint(1, to_write))] + [("index.links", 1)] * first
    if to_write > BATCH_SIZE:
        places.append(("index.batch", rng.randint(1, to_write // BATCH_SIZE)))
    return rng.choice(places)


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
    to_write = write_corpus(root, 0, rng)
    with Engine(db) as engine:
        engine.workspace_add("kb", str(root))
        engine.workspace_configure("kb", {"embedder": {"provider": "none"}})
    for version in (0, 1, 2):
        if version:
            to_write = write_corpus(root, version, rng, share=0.6)
        killed_at(db, "workspace.index", ["kb"], *index_kill_point(rng, to_write, version == 0))
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


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_embedder_killed_at_random_points_keeps_every_stored_vector(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    root, db = tmp_path / "kb", tmp_path / "autodoc.db"
    root.mkdir()
    write_corpus(root, 0, rng)
    batch = 16
    with model_server("tei") as server:
        with Engine(db) as engine:
            engine.workspace_add("kb", str(root))
            embedder = {"provider": "tei", "url": server.url, "retries": 0, "timeout": 5, "batch_size": batch}
            engine.workspace_configure("kb", {"embedder": embedder})
            engine.workspace_index("kb")
        counts = [0]
        for _ in range(4):
            # After a batch's commit n batches are kept; inside its transaction, n - 1.
            checkpoint, count = rng.choice(["embed.batch", "embed.write"]), rng.randint(1, 15)
            killed_at(db, "workspace.index", ["kb", {"wait": "semantic"}], checkpoint, count)
            conn = check_consistent(db)
            counts.append(conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            conn.close()
            kept = count if checkpoint == "embed.batch" else count - 1
            assert counts[-1] - counts[-2] == kept * batch
        with Engine(db) as engine:
            before = len(server.behaviour.requests)
            final = engine.workspace_index("kb", {"wait": "semantic"})["embedding"]
            checks = (["dimension probe"], [MODEL_CHECK_TEXT])
            sent = sum(len(r["body"]["inputs"]) for r in server.behaviour.requests[before:]
                       if r["path"] == "/embed" and r["body"]["inputs"] not in checks)
    assert final["embedded"] == final["total"] >= FILES * 5 > counts[-1]
    assert sent == final["total"] - counts[-1]  # only what was missing went to the model again


def children_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def process_state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    return process_state(pid) not in (None, "Z", "X")


def test_parse_workers_exit_when_the_indexer_is_killed(tmp_path: Path) -> None:
    """The indexer parses large runs in worker processes; SIGKILL it in the middle of a run and no
    worker outlives it by more than a few seconds (they check for their parent every 0.5 s; the
    deadline is 20 s). Broken on purpose: without ``index.parsing._exit_with_parent`` the workers stay blocked
    on their pipe and this fails."""
    rng = random.Random(7)
    root, db = tmp_path / "kb", tmp_path / "autodoc.db"
    root.mkdir()
    write_corpus(root, 0, rng)
    with Engine(db) as engine:
        engine.workspace_add("kb", str(root))
        engine.workspace_configure("kb", {"embedder": {"provider": "none"}})
    proc = autodoc(db, "workspace.index", ["kb"], {"AUTODOC_TEST_PAUSE_AT": "index.document:5"})
    try:
        def paused() -> bool:
            assert proc.poll() is None, "the run ended before its checkpoint"
            return process_state(proc.pid) == "T"

        wait_until(paused, RUN_SECONDS, every=0.05, what="the run stopped at its checkpoint")
        workers = children_of(proc.pid)
        assert workers, "a run of 300 files parses in worker processes"
    finally:
        proc.kill()
        proc.wait()
    wait_until(lambda: not [pid for pid in workers if alive(pid)], 20, every=0.1,
               what=f"the worker processes {workers} gone with their parent")
