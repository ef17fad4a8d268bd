"""The writer lease across processes: one writer, readers that keep answering, hand-over, and
takeover from a holder that was killed or went silent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

from autodoc_core.engine import Engine
from autodoc_core.errors import BUSY, AutodocError
from autodoc_core.lease import WriterLease, lease_path
from tests.conftest import PROJECT
from tests.workers import write_round

FILES = 40


def start_worker(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.workers", *args], cwd=PROJECT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def read_until(proc: subprocess.Popen, prefix: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(prefix):
            return line.strip()
        if not line and proc.poll() is not None:
            raise AssertionError(f"worker exited {proc.returncode}: {proc.stderr.read()}")
    raise AssertionError(f"no {prefix!r} from the worker within {timeout} s")


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)  # reaped: a zombie still answers kill(pid, 0)


def test_second_holder_waits_and_gets_the_lease_when_the_operation_ends(tmp_path: Path) -> None:
    first, second = WriterLease(tmp_path / "a.db"), WriterLease(tmp_path / "a.db")
    got = threading.Event()

    def write_in_second() -> None:
        with second.hold(wait_seconds=20):
            got.set()

    with first.hold():
        assert not second.try_acquire()
        thread = threading.Thread(target=write_in_second)
        thread.start()
        time.sleep(0.5)
        assert not got.is_set(), "two holders at once"
    thread.join(timeout=10)
    assert got.is_set() and second.held and not first.held
    assert not first.try_acquire()
    first.close(), second.close()


def test_waiting_too_long_is_a_clear_busy_error(tmp_path: Path) -> None:
    first, second = WriterLease(tmp_path / "a.db"), WriterLease(tmp_path / "a.db")
    with first.hold(), pytest.raises(AutodocError) as caught, second.hold(wait_seconds=0.3):
        pass
    assert caught.value.code == BUSY
    assert f"pid {os.getpid()}" in caught.value.reason
    first.close(), second.close()


def test_a_killed_holder_is_taken_over_at_once(tmp_path: Path) -> None:
    holder = start_worker("hold-lease", str(tmp_path / "a.db"))
    read_until(holder, "held")
    lease = WriterLease(tmp_path / "a.db")
    assert not lease.try_acquire()
    kill(holder)
    assert lease.try_acquire()
    lease.close()


def test_a_silent_holder_on_another_host_is_taken_over_once_its_heartbeat_is_stale(tmp_path: Path) -> None:
    path = lease_path(tmp_path / "a.db")
    record = {"holder": {"pid": 1, "host": "elsewhere", "token": "t", "heartbeat": time.time(), "since": 0}}
    path.write_text(json.dumps(record))
    lease = WriterLease(tmp_path / "a.db", stale_seconds=1.0)
    assert not lease.try_acquire()
    time.sleep(1.2)
    assert lease.try_acquire()
    lease.close()


def test_a_garbled_lease_file_is_rewritten_not_a_stuck_lock(tmp_path: Path) -> None:
    lease_path(tmp_path / "a.db").write_bytes(b"\x00{not json")
    lease = WriterLease(tmp_path / "a.db")
    assert lease.try_acquire()
    lease.close()


def test_an_idle_holder_gives_the_lease_up(tmp_path: Path) -> None:
    lease = WriterLease(tmp_path / "a.db", idle_release_seconds=0.5)
    with lease.hold():
        pass
    deadline = time.monotonic() + 5
    while lease.held and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not lease.held
    lease.close()


class SearchLoop(threading.Thread):
    """Searches without pause, recording errors and any answer that mixes a document's generations."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(daemon=True)
        self.engine, self.stop, self.errors, self.mixed, self.answers = engine, threading.Event(), [], [], 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                answer = self.engine.search_query("kb", "marker part1 part2", {"limit": 30})
            except Exception as exc:  # noqa: BLE001 - any error fails the test below
                self.errors.append(repr(exc))
                continue
            self.answers += 1
            seen: dict[str, set] = defaultdict(set)
            rounds: dict[str, set] = defaultdict(set)
            for hit in answer["hits"]:
                seen[hit["path"]].add(hit["generation"])
                rounds[hit["path"]].update(w for w in hit["snippet"].split() if w.startswith("r") and w[1:].isdigit())
            self.mixed += [p for p in seen if len(seen[p]) > 1 or len(rounds[p]) > 1]


def test_reader_keeps_answering_asks_for_the_lease_and_takes_it_over_from_a_killed_writer(tmp_path: Path) -> None:
    root, db = tmp_path / "kb", tmp_path / "autodoc.db"
    root.mkdir()
    write_round(root, FILES, 0)
    writer = start_worker("index-loop", str(db), str(root), str(FILES))
    read_until(writer, "round 1")
    reader = Engine(db)
    holder = reader.workspace_status("kb")["writer_lease"]
    assert holder["pid"] == writer.pid and holder["this_process"] is False
    loop = SearchLoop(reader)
    loop.start()
    try:
        # A write from the reader while the writer loops: handed over between the writer's runs.
        reader.workspace_index("kb")
        read_until(writer, "round")  # and the writer gets it back
        assert not reader.store.lease.held
        time.sleep(0.3)  # let the writer be mid-run
        kill(writer)
        write_round(root, FILES, 99)
        report = reader.workspace_index("kb")
        assert reader.store.lease.held
        assert report["scanned"] == FILES
        final = reader.search_query("kb", "r99", {"limit": 200})
        assert {hit["path"] for hit in final["hits"]} == {f"note{i:03}.md" for i in range(FILES)}
    finally:
        loop.stop.set()
        loop.join(timeout=10)
        if writer.poll() is None:
            kill(writer)
        reader.close()
    assert loop.errors == []
    assert loop.mixed == []
    assert loop.answers > 20
