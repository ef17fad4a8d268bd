"""The writer lease: one process at a time writes a database file.

Several editors and an agent's ``autodoc serve`` may open the same file. All of them read from
snapshots at any time; only the holder of ``<db>.lease`` writes. The lease file is a small JSON
record (holder pid, host, token, heartbeat; processes waiting for it) that is only ever read and
rewritten under ``flock``, so two processes never both believe they hold it.

- The holder refreshes its heartbeat every second from a daemon thread.
- A process that needs to write registers as waiting; the holder hands the lease over as soon
  as its current operation ends (an index run, one batch of vectors), and also gives it up
  after a while without writes.
- A holder whose process is gone (its pid is dead on this host, or its heartbeat is stale,
  e.g. on another host) is taken over: a killed editor never leaves a lock to delete by hand.
- One process at a time fills vectors, and the record says which (``filler``). It hands the lease to a
  process that waits to write (an editor's scan, a saved buffer) between two batches and waits for it
  back; the other processes' background fillers leave the fill to it while it lives. Without this, every
  scan of another editor moved the fill there, and three editors filled at half one editor's pace.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from autodoc_core.errors import BUSY, AutodocError

HEARTBEAT_SECONDS = 1.0
STALE_SECONDS = 15.0  # a heartbeat older than this means the holder is gone (hung, or on a dead host)
IDLE_RELEASE_SECONDS = 10.0
WAIT_SECONDS = 120.0
POLL_SECONDS = 0.05
RESERVE_SECONDS = 2.0  # after a hand-over, the lease waits this long for the process it was handed to


R = TypeVar("R")


def lease_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lease")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return True  # no /proc (not Linux): trust kill(0)


class WriterLease:
    def __init__(self, db_path: Path, *, stale_seconds: float = STALE_SECONDS,
                 idle_release_seconds: float = IDLE_RELEASE_SECONDS, wait_seconds: float = WAIT_SECONDS) -> None:
        self.path = lease_path(db_path)
        self.stale_seconds = stale_seconds
        self.idle_release_seconds = idle_release_seconds
        self.wait_seconds = wait_seconds
        self.host = socket.gethostname()
        self.token = uuid.uuid4().hex
        self._cond = threading.Condition(threading.RLock())
        self._held = False
        self._active = 0
        self._last_used = time.monotonic()
        self._heartbeat: threading.Thread | None = None
        self._closed = threading.Event()
        self._fills = 0  # fills under way in this process (its background filler, a foreground fill)

    # -- what callers use ------------------------------------------------------------------

    @property
    def held(self) -> bool:
        return self._held

    @contextmanager
    def hold(self, wait_seconds: float | None = None) -> Iterator[None]:
        """Hold the lease for one operation (re-entrant, shared by this process's threads)."""
        with self._cond:
            self._active += 1
        try:
            self._ensure(self.wait_seconds if wait_seconds is None else wait_seconds)
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._last_used = time.monotonic()
                idle = self._active == 0
            if idle:
                self._hand_over_if_wanted()

    def try_acquire(self) -> bool:
        """Take the lease if it is free now; never wait. True when this process holds it."""
        with self._cond:
            if self._held:
                return True
            taken = self._transact(lambda record: self._take_if_free(record, want=False))
            if taken:  # else the heartbeat, finding it idle since long before, gave it up within a second
                self._last_used = time.monotonic()
            return taken

    def holder(self) -> dict[str, Any] | None:
        """Who holds the lease (pid, host, heartbeat age), or None; for status reports."""
        record = self._transact(lambda rec: rec, write=False) or {}
        holder = record.get("holder")
        if not holder:
            return None
        return {"pid": holder.get("pid"), "host": holder.get("host"), "this_process": holder.get("token") == self.token,
                "heartbeat_age": round(time.time() - holder.get("heartbeat", 0), 2)}

    def release(self) -> None:
        with self._cond:
            if self._held:
                self._transact(self._give_up)
                self._held = False

    def close(self) -> None:
        self._closed.set()
        with self._cond:
            if self._fills:
                self._fills = 0
                self._transact(self._drop_fill)
        self.release()
        if self._heartbeat is not None:
            self._heartbeat.join(timeout=5)

    # -- the fill: one process embeds at a time ----------------------------------------------

    def claim_fill(self, take: bool = False) -> bool:
        """Record this process as the one filling vectors (re-entrant). False, with nothing recorded, while
        another live process fills, unless ``take`` (a fill a user asked for in the foreground)."""
        with self._cond:
            claimed = self._transact(lambda record: self._claim_fill(record, take))
            if claimed:
                self._fills += 1
            return claimed

    def end_fill(self) -> None:
        with self._cond:
            self._fills = max(self._fills - 1, 0)
            if not self._fills:
                self._transact(self._drop_fill)

    def filling_elsewhere(self) -> bool:
        """Whether another live process has claimed the fill (a background fill here stops at its next batch)."""
        return self._transact(lambda record: self._other_filler(record) is not None, write=False)

    def _claim_fill(self, record: dict, take: bool) -> bool:
        if self._other_filler(record) is not None and not take:
            return False
        record["filler"] = {"pid": os.getpid(), "host": self.host, "token": self.token, "at": time.time()}
        return True

    def _drop_fill(self, record: dict) -> None:
        if (record.get("filler") or {}).get("token") == self.token:
            record.pop("filler")

    def _other_filler(self, record: dict) -> dict | None:
        filler = record.get("filler")
        if not filler or filler.get("token") == self.token or not self._alive({**filler, "heartbeat": filler["at"]}):
            return None
        return filler

    def _mark_filling(self, record: dict) -> None:
        """Keep this process's claim fresh while it holds or waits for the lease (seen as stale from another
        host otherwise)."""
        filler = record.get("filler")
        if filler and filler.get("token") == self.token:
            filler["at"] = time.time()

    # -- acquiring -------------------------------------------------------------------------

    def _ensure(self, wait_seconds: float) -> None:
        with self._cond:
            if self._held:
                return
            deadline = time.monotonic() + wait_seconds
            while not self._transact(self._take_if_free):
                if time.monotonic() >= deadline:
                    self._transact(self._forget_want)
                    holder = self.holder() or {}
                    raise AutodocError(
                        BUSY,
                        f"another autodoc process (pid {holder.get('pid')} on {holder.get('host')}) is writing "
                        f"{self.path.name[:-len('.lease')]}; waited {wait_seconds:g} s for it to finish",
                        holder=holder,
                    )
                self._cond.wait(POLL_SECONDS)

    def _take_if_free(self, record: dict, want: bool = True) -> bool:
        holder = record.get("holder")
        now = time.time()
        mine = bool(holder) and holder.get("token") == self.token
        reserved = record.get("reserved_for")
        reserved_for_other = (reserved and reserved != self.token and now < record.get("reserved_until", 0)
                              and reserved in record.get("wanted", {}))
        if not mine and (self._alive(holder) or reserved_for_other):
            if want:  # ask the holder to hand over when its current operation ends
                record.setdefault("wanted", {})[self.token] = {"pid": os.getpid(), "host": self.host, "at": now}
                self._mark_filling(record)
            return False
        record["holder"] = {"pid": os.getpid(), "host": self.host, "token": self.token,
                            "heartbeat": now, "since": now if not mine else holder.get("since", now)}
        record.get("wanted", {}).pop(self.token, None)
        record.pop("reserved_for", None)
        record.pop("reserved_until", None)
        self._held = True
        self._start_heartbeat()
        return True

    def _alive(self, holder: dict | None) -> bool:
        if not holder:
            return False
        if time.time() - holder.get("heartbeat", 0) > self.stale_seconds:
            return False
        return holder.get("host") != self.host or pid_alive(int(holder.get("pid", 0)))

    def _forget_want(self, record: dict) -> None:
        record.get("wanted", {}).pop(self.token, None)

    # -- holding ---------------------------------------------------------------------------

    def _start_heartbeat(self) -> None:
        if self._heartbeat is None or not self._heartbeat.is_alive():
            self._heartbeat = threading.Thread(target=self._beat, name="autodoc-lease", daemon=True)
            self._heartbeat.start()

    def _beat(self) -> None:
        while not self._closed.wait(HEARTBEAT_SECONDS):
            with self._cond:
                if not self._held:
                    return
                self._transact(self._refresh)
                if self._held and self._active == 0:
                    idle = time.monotonic() - self._last_used > self.idle_release_seconds
                    self._hand_over_if_wanted(also_when_idle=idle)

    def _refresh(self, record: dict) -> None:
        holder = record.get("holder")
        if not holder or holder.get("token") != self.token:
            self._held = False  # taken over (our heartbeat went stale): the next write waits for it again
            return
        holder["heartbeat"] = time.time()
        self._mark_filling(record)

    def _hand_over_if_wanted(self, also_when_idle: bool = False) -> None:
        with self._cond:
            if self._held and self._active == 0:
                self._transact(lambda record: self._give_up(record, only_if_wanted=not also_when_idle))

    def _give_up(self, record: dict, only_if_wanted: bool = False) -> None:
        holder = record.get("holder")
        if not holder or holder.get("token") != self.token:
            self._held = False
            return
        now = time.time()
        wanted = {t: w for t, w in record.get("wanted", {}).items()
                  if self._alive({**w, "heartbeat": w.get("at", 0)}) and t != self.token}
        record["wanted"] = wanted
        if only_if_wanted and not wanted:
            return
        record["holder"] = None
        if wanted:
            first = min(wanted, key=lambda t: wanted[t]["at"])
            record["reserved_for"], record["reserved_until"] = first, now + RESERVE_SECONDS
        self._held = False

    # -- the file --------------------------------------------------------------------------

    def _transact(self, change: Callable[[dict[str, Any]], R], write: bool = True) -> R:
        """Read the record under flock, let ``change`` edit it in place, write it back."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if write or exc.errno not in (errno.EACCES, errno.EROFS):
                raise AutodocError(BUSY, f"cannot open the writer lease {self.path}: {exc.strerror}") from exc
            return change({})
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = b""
            while chunk := os.read(fd, 65536):
                raw += chunk
            try:
                record = json.loads(raw) if raw.strip() else {}
            except ValueError:
                record = {}  # a torn or foreign file: treat as free, it is rewritten below
            if not isinstance(record, dict):
                record = {}
            before = json.dumps(record, sort_keys=True)
            result = change(record)
            after = json.dumps(record, sort_keys=True)
            if write and after != before:
                os.lseek(fd, 0, os.SEEK_SET)
                os.ftruncate(fd, 0)
                os.write(fd, after.encode())
            return result
        finally:
            os.close(fd)
