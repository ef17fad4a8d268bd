"""The SQLite file: one writer connection, per-thread reader connections, one snapshot per query.

Every workspace lives in the same file and every row carries its ``ws_id``. The database runs
in WAL mode, so readers never block the writer and each read transaction sees one committed
state: a document's old chunks or its new ones, never a mix.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import apsw

from autodoc_core.errors import IO_ERROR, SCHEMA_TOO_NEW, AutodocError, from_sqlite
from autodoc_core.store.lease import WriterLease
from autodoc_core.store.migrations import MIGRATIONS, SCHEMA_VERSION
from autodoc_core.store.replica import ReplicaLease, file_stamp, read_mark

BUSY_TIMEOUT_MS = 10_000
# After a checkpoint, SQLite reuses the WAL from its start but keeps the file at its largest size: an index
# run's transactions left 48 MB beside a 26 MB database. It cuts the file to this size when it starts over.
WAL_SIZE_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True)
class DbLocation:
    path: Path
    explicit: bool  # named by the user (--db, $AUTODOC_DB, setup({ db })): its folder is never created


def resolve_db_path(path: str | os.PathLike[str] | None = None) -> DbLocation:
    """``path``, else ``$AUTODOC_DB``, else ``$XDG_DATA_HOME/autodoc/autodoc.db`` (XDG default ``~/.local/share``)."""
    if path:
        return DbLocation(Path(path).expanduser(), explicit=True)
    if os.environ.get("AUTODOC_DB"):
        return DbLocation(Path(os.environ["AUTODOC_DB"]).expanduser(), explicit=True)
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return DbLocation(Path(data_home) / "autodoc" / "autodoc.db", explicit=False)


def default_db_path() -> Path:
    """``$AUTODOC_DB``, else ``$XDG_DATA_HOME/autodoc/autodoc.db`` (XDG default ``~/.local/share``)."""
    return resolve_db_path().path


def _make_folder(location: DbLocation) -> None:
    """Create the default location's folder; a folder the user named must exist (a mistyped --db created
    folders and an empty database, and answered as if all was well)."""
    folder = location.path.parent
    if location.explicit:
        if not folder.is_dir():
            raise AutodocError(IO_ERROR, f"the folder {folder} of the database {location.path} does not exist; "
                               "create it first, or fix the path (only the default location, "
                               "$XDG_DATA_HOME/autodoc, is created)", path=str(location.path), folder=str(folder))
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AutodocError(IO_ERROR, f"cannot create the folder for {location.path}: {exc}") from exc


def _configure(conn: apsw.Connection) -> None:
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA cache_size=-65536")


def not_a_database(path: Path, exc: apsw.Error) -> AutodocError:
    return AutodocError(
        IO_ERROR,
        f"{path} is not a usable autodoc database (SQLite: {exc}); move the file away (autodoc then starts "
        f"an empty one: add your workspaces again) or use another file with --db or $AUTODOC_DB",
        path=str(path),
    )


def _open(path: Path, readonly: bool = False) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        conn = apsw.Connection(str(path), flags=flags)
    except apsw.Error as exc:
        raise AutodocError(IO_ERROR, f"cannot open database {path}: {exc}") from exc
    try:
        _configure(conn)
    except (apsw.NotADBError, apsw.CorruptError) as exc:
        conn.close()
        raise not_a_database(path, exc) from None
    except apsw.Error as exc:  # a read-only file system cannot hold the WAL's shared memory file, a full disk
        conn.close()
        raise from_sqlite(exc) or AutodocError(IO_ERROR, f"cannot open database {path}: {exc}") from None
    return conn


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def schema_version(conn: apsw.Connection) -> int:
    return conn.execute("PRAGMA user_version").fetchone()[0]


def migrate_check(version: int, path: Path) -> None:
    """Refuse a file written by a newer autodoc."""
    if version > SCHEMA_VERSION:
        raise AutodocError(
            SCHEMA_TOO_NEW,
            f"database {path} has schema version {version}, newer than this autodoc understands "
            f"({SCHEMA_VERSION}); upgrade autodoc or point --db at another file",
            schema_version=version,
            supported=SCHEMA_VERSION,
        )


def migrate(conn: apsw.Connection, path: Path) -> None:
    """Bring the file to SCHEMA_VERSION; refuse a file written by a newer autodoc."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = schema_version(conn)
        migrate_check(version, path)
        for number in range(version, SCHEMA_VERSION):
            conn.execute(MIGRATIONS[number])
            conn.execute(f"PRAGMA user_version={number + 1}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class Store:
    """Owns the writer connection and hands out snapshot readers, one connection per thread.

    Any number of processes may open one file: all of them read, and the one holding the writer
    lease (see lease.py) writes. The writer connection is opened on the first write.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, lease: WriterLease | None = None) -> None:
        location = resolve_db_path(path)
        self.path = location.path
        _make_folder(location)
        self.replica = read_mark(self.path)  # a read replica's file: searched, never written (store/replica.py)
        self.lease = ReplicaLease(self.replica) if self.replica else lease or WriterLease(self.path)
        self._writer: apsw.Connection | None = None
        self._writer_file: tuple[int, int] | None = None  # (device, inode) of the file the writer opened
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[tuple[threading.Thread, apsw.Connection]] = []  # one per thread that read
        self._readers_lock = threading.Lock()
        if self.replica is not None:
            self._check_replica()
        elif not self._ready_to_read():
            with self.exclusive():
                self._writer_connection()

    def _ready_to_read(self) -> bool:
        """True when the file exists in WAL mode at our schema version (no write needed to use it)."""
        if not self.path.exists():
            return False
        probe = _open(self.path, readonly=True)
        try:
            version = schema_version(probe)
            mode = probe.execute("PRAGMA journal_mode").fetchone()[0]
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            raise not_a_database(self.path, exc) from None
        finally:
            probe.close()
        migrate_check(version, self.path)
        return version == SCHEMA_VERSION and mode == "wal"

    def _check_replica(self) -> None:
        """A replica is read as it is: at this autodoc's schema version, or refused (it cannot migrate)."""
        probe = _open(self.path, readonly=True)
        try:
            version = schema_version(probe)
        except (apsw.NotADBError, apsw.CorruptError) as exc:
            raise not_a_database(self.path, exc) from None
        finally:
            probe.close()
        if version != SCHEMA_VERSION:
            raise AutodocError(SCHEMA_TOO_NEW, f"the replica {self.path} of {self.replica.url} has schema version "
                               f"{version} and this autodoc reads {SCHEMA_VERSION}: run the same autodoc version on "
                               "the writer and its replicas", schema_version=version, supported=SCHEMA_VERSION)

    def _writer_connection(self) -> apsw.Connection:
        if self._writer is None:
            writer = _open(self.path)
            writer.execute("PRAGMA journal_mode=WAL")
            writer.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            migrate(writer, self.path)
            self._writer, self._writer_file = writer, _file_identity(self.path)
        elif _file_identity(self.path) != self._writer_file:
            # Deleted (or replaced) while open: writes would go on into an unlinked file, lost at exit, while
            # other processes create and use a new one.
            raise AutodocError(IO_ERROR, f"the database {self.path} was deleted or replaced while this process "
                               "had it open; restart it (Neovim: restart the editor) to use the file there now")
        return self._writer

    def _reader(self) -> apsw.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = _open(self.path, readonly=True)
            self._local.conn = conn
            with self._readers_lock:
                self._close_readers_of_ended_threads()
                self._readers.append((threading.current_thread(), conn))
        return conn

    def _close_readers_of_ended_threads(self) -> None:
        """Worker pools (the MCP server's anyio threads) end idle threads and start new ones: without
        this, every thread that ever read kept its connection and its page cache until exit."""
        alive = []
        for thread, conn in self._readers:
            if thread.is_alive():
                alive.append((thread, conn))
            else:
                conn.close()
        self._readers = alive

    @contextmanager
    def snapshot(self) -> Iterator[apsw.Connection]:
        """A read transaction: every statement inside sees the same committed state.
        Nested calls in one thread share the outer snapshot."""
        conn = self._reader()
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        try:
            if depth:
                yield conn
                return
            conn.execute("BEGIN DEFERRED")
            try:
                # A deferred transaction takes its snapshot at the first read: take it now.
                conn.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchall()
                if self.replica is not None:
                    conn = self._replica_reader_in_step(conn)
                yield conn
            finally:
                conn.execute("COMMIT")
        finally:
            self._local.depth = depth

    def _replica_reader_in_step(self, conn: apsw.Connection) -> apsw.Connection:
        """The thread's reader inside its read transaction, on a fresh connection when the follower changed the
        file since this one last read (see store/replica.py: its cached pages may be the old state's)."""
        stamp = file_stamp(self.path)
        if getattr(self._local, "stamp", None) in (None, stamp):
            self._local.stamp = stamp
            return conn
        conn.execute("COMMIT")
        with self._readers_lock:
            self._readers = [(thread, c) for thread, c in self._readers if c is not conn]
        conn.close()
        self._local.conn = None
        fresh = self._reader()
        fresh.execute("BEGIN DEFERRED")
        fresh.execute("SELECT 1 FROM sqlite_schema LIMIT 1").fetchall()
        self._local.stamp = file_stamp(self.path)
        return fresh

    @contextmanager
    def exclusive(self, wait_seconds: float | None = None) -> Iterator[None]:
        """Hold the writer lease across several write transactions (an index run)."""
        with self.lease.hold(wait_seconds):
            yield

    @contextmanager
    def write(self) -> Iterator[apsw.Connection]:
        """One write transaction on the single writer connection; rolled back on any error."""
        with self.lease.hold(), self._write_lock:
            conn = self._writer_connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def shrink_wal(self) -> None:
        """Copy the WAL into the database and empty it, after a long write (an index run, a fill), so the
        disk space comes back now. Without waiting: a reader in another process may still need the WAL's
        pages; then it stays for now and ``WAL_SIZE_LIMIT`` trims it when it starts over. Nor for the lease:
        another process writing now will write into the WAL again."""
        if not self.lease.try_acquire():
            return
        with self.lease.hold(0), self._write_lock:
            writer = self._writer_connection()
            writer.setbusytimeout(0)
            try:
                writer.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
            except apsw.Error:  # busy, or a disk error: the writes are committed, the space waits
                pass
            finally:
                writer.setbusytimeout(BUSY_TIMEOUT_MS)

    def close(self) -> None:
        with self._readers_lock:
            for _thread, conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        self.lease.close()
