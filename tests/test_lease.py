"""The writer lease across processes: one writer, readers that keep answering, hand-over, and
takeover from a holder that was killed or went silent.

Every wait here waits for a state (a line from a worker, a record in the lease file, a stopped
process), so a slow or loaded machine only makes the tests longer. Broken on purpose to check them:
``_take_if_free`` ignoring ``reserved_for`` fails the reservation test; a heartbeat never counted
stale fails the silent-holder test; ``pid_alive`` always True fails both killed-holder tests.
"""

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

from autodoc_core.errors import BUSY, AutodocError
from autodoc_core.service.engine import Engine
from autodoc_core.store.lease import WriterLease, lease_path
from tests.conftest import PROJECT, LineReader, wait_until
from tests.lease_file import lease_record
from tests.workers import PAUSE_FILE, write_round

FILES = 40


class Worker:
    """A ``tests.workers`` process whose output lines are read with a deadline."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.workers", *args], cwd=PROJECT, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.pid = self.proc.pid
        self.lines = LineReader(self.proc.stdout)

    def read_until(self, prefix: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.next(timeout=max(deadline - time.monotonic(), 0.01))
            except AssertionError:
                self.proc.poll()
                raise AssertionError(f"no {prefix!r} from the worker (exit {self.proc.returncode})") from None
            if line.startswith(prefix):
                return line.strip()

    def state(self) -> str | None:
        try:
            return Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return None


def kill(worker: Worker) -> None:
    worker.proc.send_signal(signal.SIGKILL)
    worker.proc.wait(timeout=30)  # reaped: a zombie still answers kill(pid, 0)


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
        # the second is registered as waiting: from here on it can only get the lease by hand-over
        wait_until(lambda: second.token in lease_record(tmp_path / "a.db").get("wanted", {}), what="a waiter")
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
    holder = Worker("hold-lease", str(tmp_path / "a.db"))
    holder.read_until("held")
    lease = WriterLease(tmp_path / "a.db")
    assert not lease.try_acquire()
    kill(holder)
    assert lease.try_acquire()
    lease.close()


def test_a_silent_holder_on_another_host_is_taken_over_once_its_heartbeat_is_stale(tmp_path: Path) -> None:
    path = lease_path(tmp_path / "a.db")
    lease = WriterLease(tmp_path / "a.db", stale_seconds=30.0)
    for heartbeat_age, taken in ((0, False), (10, False), (31, True)):  # fresh, recent, stale
        record = {"holder": {"pid": 1, "host": "elsewhere", "token": "t", "heartbeat": time.time() - heartbeat_age,
                             "since": 0}}
        path.write_text(json.dumps(record))
        assert lease.try_acquire() is taken, heartbeat_age
    lease.close()


def test_a_hand_over_is_reserved_for_the_waiter_for_a_while(tmp_path: Path) -> None:
    """The holder hands over to the process that asked; a third that only tries meanwhile is refused
    until the reservation runs out."""
    db = tmp_path / "a.db"
    holder, waiter, third = WriterLease(db), WriterLease(db), WriterLease(db)
    got = threading.Event()

    def wait_for_lease() -> None:
        with waiter.hold(wait_seconds=60):
            got.set()

    thread = threading.Thread(target=wait_for_lease)
    with holder.hold():
        thread.start()
        wait_until(lambda: waiter.token in lease_record(db).get("wanted", {}), what="the waiter's request")
        # Holding the waiter's own lock keeps its polling thread from taking the lease at once.
        waiter._cond.acquire()
    try:
        record = lease_record(db)
        assert record["holder"] is None and record["reserved_for"] == waiter.token
        assert not third.try_acquire()
        record["reserved_until"] = time.time() - 1  # the reservation ran out: the lease is free for anyone
        lease_path(db).write_text(json.dumps(record))
        assert third.try_acquire()
        third.release()
    finally:
        waiter._cond.release()
    thread.join(timeout=60)
    assert got.is_set() and waiter.held
    for lease in (holder, waiter, third):
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
    wait_until(lambda: not lease.held, what="the idle holder to give the lease up")
    assert lease_record(tmp_path / "a.db")["holder"] is None
    lease.close()


class SearchLoop(threading.Thread):
    """Searches without pause, recording errors and any answer that mixes a document's generations."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(daemon=True)
        self.engine, self.stop, self.errors, self.mixed, self.answers = engine, threading.Event(), [], [], 0

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                answer = self.engine.search_query("kb", "marker part1 part2", {"limit": 30}).to_wire()
            except Exception as exc:  # any error fails the test below
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
    writer = Worker("index-loop", str(db), str(root), str(FILES))
    writer.read_until("round 1")
    reader = Engine(db)
    holder = reader.workspace_status("kb")["writer_lease"]
    assert holder["pid"] == writer.pid and holder["this_process"] is False
    loop = SearchLoop(reader)
    loop.start()
    try:
        wait_until(lambda: loop.answers > 0, what="a first answer")
        # A write from the reader while the writer loops: handed over between the writer's runs.
        reader.workspace_index("kb")
        wait_until(lambda: (reader.workspace_status("kb")["writer_lease"] or {}).get("pid") == writer.pid,
                   what="the writer to hold the lease again")
        assert not reader.store.lease.held
        answers = loop.answers
        wait_until(lambda: loop.answers > answers, what="answers while the writer writes")
        # Stop the writer half-way through a run (it holds the lease, half its files are written), kill it.
        (tmp_path / PAUSE_FILE).touch()
        wait_until(lambda: writer.state() == "T", what="the writer to stop mid-run")
        assert reader.workspace_status("kb")["writer_lease"]["pid"] == writer.pid
        kill(writer)
        write_round(root, FILES, 99)
        report = reader.workspace_index("kb")
        assert reader.store.lease.held
        assert report["scanned"] == FILES
        final = reader.search_query("kb", "r99", {"limit": 200}).to_wire()
        assert {hit["path"] for hit in final["hits"]} == {f"note{i:03}.md" for i in range(FILES)}
        answers = loop.answers
        wait_until(lambda: loop.answers > answers, what="answers after the takeover")
    finally:
        loop.stop.set()
        loop.join(timeout=30)
        if writer.proc.poll() is None:
            kill(writer)
        reader.close()
    assert loop.errors == []
    assert loop.mixed == []
