"""``--replicate-to URL`` and ``--replica-of URL``: one writer's index served by any number of read replicas,
through Litestream (https://litestream.io), run as a child process the server supervises.

The writer runs ``litestream replicate DB URL``: every committed transaction shipped to the URL (a folder,
S3 and its compatibles, GCS, Azure, SFTP, WebDAV). A replica restores the file once, then runs Litestream's
follower, ``litestream restore -f``, which applies each new transaction to the local file in place: the
replica searches a local SQLite file at disk speed. Not Litestream's VFS extension: that one loads a Go
runtime into the server's process, takes its URL from one process-wide environment variable, and fetches
every page it lacks from the storage while a search waits; and apsw could not open a database through it in
our trial (doc/team.md).

Either child is restarted when it dies (after 1 s, doubling to 30 s), stopped with the server, and its log
lines are the server's (``litestream: ...``). ``/health`` and ``/metrics`` read ``ReplicationState``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from autodoc_core.surface.http_options import SetupError

log = logging.getLogger("autodoc.litestream")
log.setLevel(logging.INFO)  # Litestream's own log lines are the server's log (the rest of it shows warnings)

LITESTREAM_VERSION = "0.5.17"  # the pinned `team` extra (pyproject.toml)
INSTALL_HINT = ("install it with: pip install 'autodoc[team]' (from a checkout: make team), or put Litestream "
                f"{LITESTREAM_VERSION} on PATH (https://litestream.io/install)")
FOLLOW_INTERVAL = "200ms"  # how often the follower asks the storage for new transactions
RESTART_FIRST_SECONDS, RESTART_MAX_SECONDS = 1.0, 30.0
LAG_CHECK_SECONDS = 2.0  # a replica lists the storage at most this often to say its lag
PR_SET_PDEATHSIG = 1
FIELD = re.compile(r'(\w[\w.]*)=("(?:[^"\\]|\\.)*"|\S+)')


def litestream_binary() -> str:
    """``$AUTODOC_LITESTREAM``, else the ``litestream`` beside this Python (the venv's, from the extra), else on
    PATH."""
    named = os.environ.get("AUTODOC_LITESTREAM")
    if named:
        if not (os.path.isfile(named) and os.access(named, os.X_OK)):
            raise SetupError(f"$AUTODOC_LITESTREAM names {named}, which is no program: {INSTALL_HINT}")
        return named
    beside = Path(sys.executable).with_name("litestream")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("litestream")
    if found is None:
        raise SetupError(f"--replicate-to and --replica-of run Litestream, and there is no litestream binary: "
                         f"{INSTALL_HINT}")
    return found


def ended_with_parent() -> None:
    """In the child, before it runs: the kernel sends it SIGTERM when the server ends, however it ends (uvicorn
    re-raises the SIGTERM it caught, which ends the server before any ``finally``; a SIGKILL runs none)."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def check_url(url: str) -> str:
    if "://" not in url:
        raise SetupError(f"a replica URL looks like file:///srv/autodoc/replica or s3://bucket/autodoc, got {url!r}")
    return url


def log_fields(line: str) -> dict[str, str]:
    """Litestream's log line (``time=... level=INFO msg="..." key=value``) as a dict."""
    return {key: value[1:-1].replace('\\"', '"') if value.startswith('"') else value
            for key, value in FIELD.findall(line)}


@dataclass
class ReplicationState:
    """What ``/health`` says of replication. The writer: the last transaction shipped; a replica: the one it
    serves and its lag."""

    role: str  # "writer" or "replica"
    url: str
    txid: int | None = None
    shipped_at: float | None = None  # the writer: when Litestream last shipped a transaction (time.time())
    last_error: str | None = None
    restarts: int = 0
    lag_seconds: float | None = None
    newest_change_seconds: float | None = None  # a replica: the age of the newest transaction in the storage
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def as_dict(self) -> dict[str, Any]:
        with self.lock:
            body = {"role": self.role, "url": self.url, "txid": f"{self.txid:016x}" if self.txid else None,
                    "last_error": self.last_error, "restarts": self.restarts}
            if self.role == "writer":
                body["shipped_seconds_ago"] = None if self.shipped_at is None else round(time.time() - self.shipped_at,
                                                                                         3)
            else:
                body["lag_seconds"] = self.lag_seconds
                body["newest_change_seconds_ago"] = self.newest_change_seconds
            return body


class Supervised:
    """A child process kept running: restarted when it dies, stopped with ``stop``; each stderr line is given to
    ``on_line`` and, at INFO or above, logged."""

    def __init__(self, name: str, command: list[str], state: ReplicationState, on_line: Any) -> None:
        self.name, self.command, self.state, self.on_line = name, command, state, on_line
        self.process: subprocess.Popen[str] | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"autodoc-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        delay = RESTART_FIRST_SECONDS
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.PIPE, text=True, errors="replace",
                                                preexec_fn=ended_with_parent)
            except OSError as exc:
                self._failed(f"cannot start {self.command[0]}: {exc.strerror or exc}")
            else:
                for line in self.process.stderr or ():
                    self._line(line.rstrip("\n"))
                status = self.process.wait()
                if self._stopping.is_set():
                    return
                self._failed(f"{self.name} ended (status {status}); restarting it")
            if time.monotonic() - started > 60:
                delay = RESTART_FIRST_SECONDS
            if self._stopping.wait(delay):
                return
            delay = min(delay * 2, RESTART_MAX_SECONDS)
            with self.state.lock:
                self.state.restarts += 1

    def _line(self, line: str) -> None:
        fields = log_fields(line)
        level = fields.get("level", "INFO")
        if level == "ERROR":
            with self.state.lock:
                self.state.last_error = fields.get("err") or fields.get("error") or fields.get("msg") or line
        if level in ("INFO", "WARN", "ERROR"):
            log.log(logging.WARNING if level != "INFO" else logging.INFO, "%s: %s", self.name, line)
        self.on_line(fields)

    def _failed(self, reason: str) -> None:
        log.warning("%s", reason)
        with self.state.lock:
            self.state.last_error = reason

    def stop(self) -> None:
        self._stopping.set()
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._thread.join(15)


class Replicator:
    """The writer's side: ``litestream replicate DB URL``."""

    def __init__(self, db: Path, url: str) -> None:
        self.state = ReplicationState("writer", check_url(url))
        self.binary = litestream_binary()
        self.child = Supervised("litestream replicate", [self.binary, "replicate", str(db), url], self.state,
                                lambda fields: None)
        self._listed = 0.0

    def start(self) -> None:
        self.child.start()

    def stop(self) -> None:
        self.child.stop()

    def status(self) -> dict[str, Any]:
        """The last transaction in the storage, and when it was shipped (from a listing, at most every
        LAG_CHECK_SECONDS)."""
        if time.time() - self._listed >= LAG_CHECK_SECONDS:
            self._listed = time.time()
            stamps = list_storage(self.binary, self.url, self.state)
            if stamps:
                txid, at = max(stamps)
                with self.state.lock:
                    if self.state.txid is not None and txid > self.state.txid:
                        self.state.last_error = None  # shipping again: the error is over
                    self.state.txid, self.state.shipped_at = txid, at
        return self.state.as_dict()

    @property
    def url(self) -> str:
        return self.state.url


def list_storage(binary: str, url: str, state: ReplicationState) -> list[tuple[int, float]] | None:
    """(transaction, when it was shipped) of each file in the storage, or None (the reason in ``state``)."""
    try:
        listed = subprocess.run([binary, "ltx", "-json", "-level", "all", url], capture_output=True, text=True,
                                errors="replace", timeout=30)
        reason = (listed.stderr.strip().splitlines() or ["no reason"])[-1]
        files = json.loads(listed.stdout) if listed.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        files, reason = None, str(exc)
    if files is None:
        with state.lock:
            state.last_error = f"cannot list {url}: {reason}"
        return None
    with state.lock:
        if state.last_error is not None and state.last_error.startswith("cannot list "):
            state.last_error = None
    return [(int(f["max_txid"], 16), _epoch(f["timestamp"])) for f in files]


class Follower:
    """A replica's side: restore the file once (``prepare``), then follow the writer's transactions."""

    def __init__(self, db: Path, url: str) -> None:
        from autodoc_core.store.replica import read_mark

        self.db, self.url = db, check_url(url)
        self.binary = litestream_binary()
        self.state = ReplicationState("replica", url)
        if db.exists() and read_mark(db) is None:
            raise SetupError(f"{db} exists and is not a replica: give --replica-of a new file with --db (it restores "
                             "the writer's index there), or run this file as a writer")
        self.child = Supervised("litestream follow", [self.binary, "restore", "-f", "-follow-interval",
                                                      FOLLOW_INTERVAL, "-o", str(db), url], self.state, self._seen)
        self._lag_checked = 0.0

    def prepare(self) -> None:
        """Restore the writer's file on the first start; a later start resumes from the transaction it holds."""
        from autodoc_core.store.replica import served_txid, write_mark

        if self.db.exists():
            self.state.txid = served_txid(self.db)
            return
        restoring = self.db.with_name(self.db.name + ".restoring")
        for stale in (restoring, Path(str(restoring) + ".tmp")):
            stale.unlink(missing_ok=True)
        done = subprocess.run([self.binary, "restore", "-json", "-o", str(restoring), self.url], capture_output=True,
                              text=True, errors="replace", timeout=600)
        if done.returncode != 0:
            raise SetupError(self._restore_failure(done.stderr.strip() or done.stdout.strip()))
        txid = json.loads(done.stdout)["txid"]
        try:
            _rollback_journal_mode(restoring)  # first: a WAL file read here would leave its -shm and -wal behind
            _check_schema(restoring, self.url)
        except SetupError:
            restoring.unlink(missing_ok=True)
            raise
        write_mark(self.db, self.url)
        self.db.with_name(self.db.name + "-txid").write_text(txid + "\n", encoding="ascii")
        os.replace(restoring, self.db)
        self.state.txid = int(txid, 16)

    def _restore_failure(self, said: str) -> str:
        if "no matching backup files" in said or "no snapshots available" in said:
            return (f"nothing is replicated at {self.url} yet: start the writer first (autodoc mcp --http ADDR "
                    f"--replicate-to {self.url}), then this replica")
        return f"cannot restore the writer's index from {self.url}: {said.splitlines()[-1] if said else 'no reason'}"

    def _seen(self, fields: dict[str, str]) -> None:
        if fields.get("msg") == "follow: applied updates" and fields.get("to_txid"):
            with self.state.lock:
                self.state.txid = int(fields["to_txid"], 16)
                self.state.last_error = None

    def start(self) -> None:
        self.child.start()

    def stop(self) -> None:
        self.child.stop()

    def status(self) -> dict[str, Any]:
        from autodoc_core.store.replica import served_txid

        self.refresh_lag()
        served = served_txid(self.db)  # the follower's own record, read at each look
        with self.state.lock:
            self.state.txid = served if served is not None else self.state.txid
        return self.state.as_dict()

    def refresh_lag(self) -> None:
        """The lag in seconds: the age of the oldest transaction in the storage that the file does not hold yet
        (0: it holds them all), from a listing of the storage at most every LAG_CHECK_SECONDS."""
        from autodoc_core.store.replica import served_txid

        now = time.time()
        if now - self._lag_checked < LAG_CHECK_SECONDS:
            return
        self._lag_checked = now
        served = served_txid(self.db) or 0
        stamps = list_storage(self.binary, self.url, self.state)
        if stamps is None:
            return
        behind = [at for txid, at in stamps if txid > served]
        with self.state.lock:
            self.state.txid = served or self.state.txid
            self.state.lag_seconds = round(max(0.0, now - min(behind)), 3) if behind else 0.0
            self.state.newest_change_seconds = round(max(0.0, now - max(at for _, at in stamps)), 3) if stamps \
                else None


Replication = Replicator | Follower


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _check_schema(path: Path, url: str) -> None:
    from autodoc_core.store.migrations import SCHEMA_VERSION
    from autodoc_core.store.replica import restored_schema

    version, named = restored_schema(path)
    if version is None:
        raise SetupError(f"what {url} holds is not a usable SQLite database: {named}")
    if named is None:
        raise SetupError(f"what {url} holds is not an autodoc index (no workspaces table)")
    if version != SCHEMA_VERSION:
        raise SetupError(f"the index at {url} has schema version {version} and this autodoc reads {SCHEMA_VERSION}: "
                         "run the same autodoc version on the writer and its replicas")


def _rollback_journal_mode(path: Path) -> None:
    """Mark the restored file as a rollback-journal database (header bytes 18 and 19), before anyone reads it.
    Litestream's follower does the same with every page 1 it applies; a file left in WAL mode would have every
    reader hold its shared lock for as long as its connection is open, and the follower, which applies under
    SQLite's exclusive lock, would wait for ever."""
    with open(path, "r+b") as handle:
        handle.seek(18)
        handle.write(b"\x01\x01")


@dataclass(frozen=True)
class TeamOptions:
    """``--replicate-to``, ``--replica-of`` and ``--workers`` (``worker_socket``: a worker's inherited socket)."""

    replicate_to: str | None = None
    replica_of: str | None = None
    workers: int = 1
    worker_socket: int | None = None

    @property
    def worker(self) -> bool:
        return self.worker_socket is not None


def start_replication(db: Path, team: TeamOptions) -> Replication | None:
    """The writer's or the replica's Litestream, its child started unless this process is one of ``--workers``
    (the first process runs it for all of them); a replica's file restored first. SetupError says what is wrong."""
    if team.replicate_to and team.replica_of:
        raise SetupError("--replicate-to and --replica-of exclude each other: a server is the writer or a replica")
    if team.replicate_to:
        replication: Replication = Replicator(db, team.replicate_to)
    elif team.replica_of:
        replication = Follower(db, team.replica_of)
        if not team.worker:
            replication.prepare()
    else:
        return None
    if not team.worker:
        replication.start()
    return replication
