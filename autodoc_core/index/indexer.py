"""Incremental indexing of one workspace into the store.

A file is re-read only when its size or mtime changed, and re-parsed only when its content hash
(or the chunking settings, or the facet schema) changed. Each document is written in one
transaction together with its new generation; unchanged chunks keep their rows (only their
spans move), so the lexical index and, later, embeddings are rewritten only for changed text.

Why one module of about 400 lines: change detection, rename pairing and the batched writes share
one run's state (its report, problems and whether links changed), and the SQL for the document
tables (documents, chunks, facets, keys, links, problems, changes) lives next to the code that
owns them. Parsing in worker processes is in ``parsing``, link resolution in ``links``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from autodoc_core.errors import IO_ERROR, AutodocError
from autodoc_core.index import checkpoints
from autodoc_core.index.links import link_signature, resolve_links
from autodoc_core.index.parsing import parse_all
from autodoc_core.index.vectors import bump_epoch
from autodoc_core.parse import frontmatter as fm
from autodoc_core.parse.document import ParsedDocument
from autodoc_core.parse.walk import (
    FoundFile,
    OutsideRoot,
    RootUnlisted,
    WalkNotes,
    canonical_relpaths,
    listed_markdown_files,
    markdown_files,
    not_indexed_reason,
    open_inside,
)
from autodoc_core.retrieve.cjk import index_text
from autodoc_core.retrieve.lexical import fts_table, head_text
from autodoc_core.retrieve.symbols import store_symbols
from autodoc_core.store.database import Store
from autodoc_core.store.workspace import Workspace

# 2: symbols collected per chunk; 3: line_count without the empty tail after a final newline; 4: comments and
# tables of contents are not indexed, and sections with no text are no chunks; 5: empty anchors and rules are not
# indexed either, and a block over four budgets is cut between lines; 6: without a schema file, frontmatter fields
# are facets (strings), and a non-ASCII facet value is kept case-folded too; 7: CJK runs are indexed as bigrams and
# full-width forms folded (retrieve.cjk): the word index of every chunk is rewritten, its rows and vectors kept
PARSER_VERSION = 7
CJK_BIGRAMS_SINCE = 7
BATCH_SIZE = 200
BINARY_SNIFF_BYTES = 8192
CHANGE_LOG_KEEP_SECONDS = 7 * 24 * 3600
CHANGE_LOG_KEEP_ROWS = 100_000


@dataclass
class IndexProgress:
    """A run under way, for workspace.status: files scanned, then documents written of those to write."""

    phase: str = "scanning"  # "scanning", "writing", then "finishing" (deletions, links)
    scanned: int = 0
    to_write: int = 0
    written: int = 0
    started: float = field(default_factory=time.monotonic)
    writing_since: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        elapsed = time.monotonic() - (self.writing_since or self.started)
        rate = self.written / elapsed if self.phase == "writing" and elapsed > 0 else 0.0
        eta = (self.to_write - self.written) / rate if rate > 0 else None
        return {"phase": self.phase, "scanned": self.scanned, "to_write": self.to_write, "written": self.written,
                "rate": round(rate, 1), "eta_seconds": round(eta, 1) if eta is not None else None,
                "seconds": round(time.monotonic() - self.started, 1)}


RACY_SECONDS = 2.0  # file systems keep times to 1-2 s (FAT, some network mounts); most to 1-10 ms


@dataclass
class IndexReport:
    scanned: int = 0
    added: int = 0
    changed: int = 0
    renamed: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks_written: int = 0
    chunks_kept: int = 0
    chunks_deleted: int = 0
    seconds: float = 0.0
    problems: list[dict] = field(default_factory=list)
    not_indexed: list[dict] = field(default_factory=list)  # listed paths (a run with ``only``) the walk would not index

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass
class _Existing:
    id: int
    size: int
    mtime_ns: int
    content_hash: str
    parsed_with: str


def content_hash(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def _parser_version(parsed_with: str) -> int:
    """The PARSER_VERSION a document was parsed with ("p6:t512:snone" -> 6)."""
    head = parsed_with.split(":", 1)[0]
    return int(head[1:]) if head[:1] == "p" and head[1:].isdigit() else 0


def _fts_fields(parsed: ParsedDocument) -> tuple[str, list[str], list[str]]:
    return parsed.title, parsed.aliases, parsed.tags


class Indexer:
    def __init__(self, store: Store, ws: Workspace, progress: IndexProgress | None = None,
                 on_file: Callable[[str], None] | None = None) -> None:
        self.store = store
        self.ws = ws
        self.progress = progress or IndexProgress()
        self.on_file = on_file  # called with each file's path as the scan reaches it
        schema_raw = fm.schema_bytes(Path(ws.root))  # read once: the digest names the schema parsed
        self.schema = fm.parse_schema(schema_raw)
        schema_digest = content_hash(schema_raw)[:8] if schema_raw is not None else "none"
        self.parsed_with = f"p{PARSER_VERSION}:t{ws.option('section_tokens')}:s{schema_digest}"
        self.report = IndexReport()
        self.fts = fts_table(ws.id)
        self.paths_with_problems: set[str] = set()
        self.stale_problems: set[str] = set()
        self.links_changed = False  # a written document's keys, links or supersession changed
        self.started_ns = time.time_ns()  # when run() began: files written since (or just before) are racy

    def run(self, only: list[str] | None = None) -> IndexReport:
        """Index the workspace; ``only`` limits the pass to these relative paths (a saved buffer)."""
        if only is not None:
            only = canonical_relpaths(self.ws.root, only)
        started = time.perf_counter()
        self.started_ns = time.time_ns()
        existing = self._existing(only)
        notes = WalkNotes()
        found = self._found(only, notes)
        if only is None and existing and not found and not os.listdir(self.ws.root):
            # An empty folder where documents were: most likely a mount point whose drive is not mounted.
            raise AutodocError(IO_ERROR, f"the workspace root {self.ws.root} is empty but the index holds "
                               f"{len(existing)} documents (a drive not mounted?); the index is unchanged. If the "
                               "files are gone for good, remove the workspace (workspace.remove)",
                               path=self.ws.root)
        self.report.scanned = len(found)
        pending: list[tuple[FoundFile, bytes, str]] = []
        touched: list[tuple[FoundFile, _Existing]] = []
        skipped: dict[str, str] = {}
        for item in found.values():
            self.progress.scanned += 1
            if self.on_file:
                self.on_file(item.relpath)
            old = existing.get(item.relpath)
            if old and old.size == item.size and old.mtime_ns == item.mtime_ns and old.parsed_with == self.parsed_with:
                self.report.unchanged += 1
                continue
            raw, reason = self._read(item)
            if raw is None:
                skipped[item.relpath] = reason or "unreadable"
                continue
            digest = content_hash(raw)
            if old and old.content_hash == digest and old.parsed_with == self.parsed_with:
                touched.append((item, old))
                self.report.unchanged += 1
            else:
                pending.append((item, raw, digest))

        for name in notes.bad_names:
            skipped[name] = "the name is not valid UTF-8; rename it to index what it holds"
        for folder in notes.unlisted:  # an unreadable folder is not an empty one: its documents stay
            skipped[f"{folder}/"] = "the folder cannot be listed; its documents stay as last indexed"
        gone = {p: e for p, e in existing.items()
                if (p not in found or p in skipped) and not any(p.startswith(f"{f}/") for f in notes.unlisted)}
        if only is not None:
            gone = {p: e for p, e in gone.items() if p in only}
            self.report.not_indexed = [{"path": p, "reason": not_indexed_reason(self.ws.root, p)}
                                       for p in dict.fromkeys(only) if p not in found and p not in existing]
        # Only a new path can be a rename: a file moved over an existing one is that document changed,
        # and the moved-away path must still go (paired, it stayed as a ghost).
        renames = self._pair_renames(gone, [p for p in pending if p[0].relpath not in existing])
        # Problems of files that are gone (deleted, or skipped before and deleted since) go with them.
        self.stale_problems = set() if only is not None else self.paths_with_problems - set(found) - set(skipped)
        self.progress.phase, self.progress.to_write = "writing", len(pending)
        self.progress.writing_since = time.monotonic()
        self._write(pending, touched, renames, gone, skipped, existing)
        self.report.seconds = time.perf_counter() - started
        return self.report

    def _existing(self, only: list[str] | None) -> dict[str, _Existing]:
        """Stored documents (only those at ``only``'s paths when given)."""
        columns = "SELECT path, id, size, mtime_ns, content_hash, chunked_with FROM documents WHERE ws_id = ?"
        with self.store.snapshot() as conn:
            self.paths_with_problems = {
                r[0] for r in conn.execute("SELECT DISTINCT path FROM problems WHERE ws_id = ?", (self.ws.id,))
            }
            if only is None:
                rows = conn.execute(columns, (self.ws.id,)).fetchall()
            else:
                rows = [row for path in dict.fromkeys(only)
                        for row in conn.execute(f"{columns} AND path = ?", (self.ws.id, path))]
            return {r[0]: _Existing(*r[1:]) for r in rows}

    def _found(self, only: list[str] | None, notes: WalkNotes) -> dict[str, FoundFile]:
        """The files the walk finds. A root that cannot be listed (a drive not mounted, a folder moved)
        stops the run before anything is written: walked as empty, it deleted every document."""
        try:
            files = markdown_files(self.ws.root, notes) if only is None else listed_markdown_files(self.ws.root, only)
            return {item.relpath: item for item in files}
        except RootUnlisted as exc:
            raise AutodocError(IO_ERROR, f"{exc}; the index is unchanged (is the drive mounted?)",
                               path=self.ws.root) from None

    def _read(self, item: FoundFile) -> tuple[bytes | None, str | None]:
        limit = self.ws.option("max_file_bytes")
        if item.size > limit:
            return None, f"skipped: {item.size / 1e6:.1f} MB is over the {limit / 1e6:g} MB limit (max_file_bytes)"
        try:
            with open_inside(self.ws.root, item.abspath) as handle:
                # Ask for about the file's size, not the limit: read(n) allocates n bytes up front, and
                # a 10 MB buffer shrunk to 2 kB leaves a memory mapping behind per file (259k files
                # exhausted vm.max_map_count).
                raw = handle.read(min(limit + 1, item.size + 65536))
        except FileNotFoundError:
            return None, "skipped: the file disappeared while it was being indexed"
        except OutsideRoot:
            return None, "skipped: the file now resolves outside the workspace root"
        except OSError as exc:
            return None, f"skipped: cannot read the file: {exc.strerror or exc}"
        if len(raw) > limit:
            return None, f"skipped: the file grew past the {limit / 1e6:g} MB limit (max_file_bytes)"
        if b"\x00" in raw[:BINARY_SNIFF_BYTES]:
            return None, "skipped: binary content (NUL bytes), not Markdown text"
        return raw, None

    def _pair_renames(self, gone: dict[str, _Existing], pending: list) -> dict[str, tuple[str, _Existing]]:
        """New path -> (old path, old row) where a vanished file's exact content reappears elsewhere."""
        by_hash: dict[str, list[str]] = {}
        for path, old in gone.items():
            by_hash.setdefault(old.content_hash, []).append(path)
        renames = {}
        for item, _raw, digest in pending:
            candidates = by_hash.get(digest)
            if candidates and item.relpath not in gone:
                old_path = candidates.pop()
                renames[item.relpath] = (old_path, gone[old_path])
        for old_path, _ in renames.values():
            gone.pop(old_path, None)
        return renames

    def _write(self, pending: list[tuple[FoundFile, bytes, str]], touched: list[tuple[FoundFile, _Existing]],
               renames: dict[str, tuple[str, _Existing]], gone: dict[str, _Existing], skipped: dict[str, str],
               existing: dict[str, _Existing]) -> None:
        if touched:
            with self.store.write() as conn:
                for item, old in touched:
                    conn.execute(
                        "UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?",
                        (item.size, self._stored_mtime(item), old.id)
                    )
        parsed_documents = parse_all([(raw, item.relpath) for item, raw, _ in pending], self.schema,
                                     self.ws.option("section_tokens"))
        for start in range(0, len(pending), BATCH_SIZE):
            with self.store.write() as conn:
                for item, _raw, digest in pending[start : start + BATCH_SIZE]:
                    parsed = next(parsed_documents)
                    self._write_document(conn, item, parsed, digest, existing.get(item.relpath), renames)
                    self.progress.written += 1
                    checkpoints.reached("index.document")  # inside the batch's transaction
                bump_epoch(conn, self.ws.id)
                if self.links_changed:
                    conn.execute("UPDATE workspaces SET links_dirty = 1 WHERE id = ?", (self.ws.id,))
            checkpoints.reached("index.batch")  # after the batch's commit
        self.progress.phase = "finishing"
        with self.store.write() as conn:
            for path, old in gone.items():
                self._delete_document(conn, path, old.id)
            if gone:
                bump_epoch(conn, self.ws.id)
            for path, reason in skipped.items():
                self._set_problems(conn, path, "skipped", [reason])
                self.report.skipped += 1
            for path in self.stale_problems:
                conn.execute("DELETE FROM problems WHERE ws_id = ? AND path = ?", (self.ws.id, path))
            dirty = conn.execute("SELECT links_dirty FROM workspaces WHERE id = ?", (self.ws.id,)).fetchone()[0]
            if dirty or gone:
                checkpoints.reached("index.links")
                resolve_links(conn, self.ws.id)
                conn.execute("UPDATE workspaces SET links_dirty = 0 WHERE id = ?", (self.ws.id,))
            self._prune_change_log(conn)
            conn.execute("UPDATE workspaces SET indexed_at = ? WHERE id = ?", (time.time(), self.ws.id))

    def _stored_mtime(self, item: FoundFile) -> int:
        """The file's time, or 0 when it was written within RACY_SECONDS of this run's start: a same-size
        rewrite in the same timestamp tick would look unchanged for good ("racily clean", as git calls
        it), so such a file is read and compared by content next time, until its time is old enough."""
        return item.mtime_ns if item.mtime_ns < self.started_ns - int(RACY_SECONDS * 1e9) else 0

    def _next_generation(self, conn: apsw.Connection) -> int:
        generation = conn.execute(
            "UPDATE workspaces SET next_generation = next_generation + 1 WHERE id = ? RETURNING next_generation - 1",
            (self.ws.id,),
        ).fetchone()[0]
        return generation

    def _write_document(self, conn: apsw.Connection, item: FoundFile, parsed: ParsedDocument, digest: str,
                        old: _Existing | None, renames: dict[str, tuple[str, _Existing]]) -> None:
        generation = self._next_generation(conn)
        renamed_from = None
        if old is None and item.relpath in renames:
            renamed_from, old = renames[item.relpath]
        values = (
            item.relpath, item.size, self._stored_mtime(item), digest, self.parsed_with, generation, parsed.title,
            parsed.doc_type, parsed.status, json.dumps(parsed.aliases), json.dumps(parsed.tags),
            json.dumps(parsed.meta, ensure_ascii=False), json.dumps(parsed.supersedes),
            json.dumps(parsed.superseded_by), parsed.line_count,
        )
        columns = (
            "path, size, mtime_ns, content_hash, chunked_with, generation, title, doc_type, status, aliases, "
            "tags, meta, supersedes, superseded_by, line_count"
        )
        # Only the first change of a run needs the comparison: after it, links are re-resolved anyway.
        compare = old is not None and not self.links_changed
        before = link_signature(conn, old.id) if compare else None
        if old is None:
            doc_id = conn.execute(
                f"INSERT INTO documents(ws_id, {columns}) VALUES (?, {', '.join('?' * 15)}) RETURNING id",
                (self.ws.id, *values),
            ).fetchone()[0]
            old_fts = None
        else:
            doc_id = old.id
            old_fts = conn.execute("SELECT title, aliases, tags FROM documents WHERE id = ?", (doc_id,)).fetchone()
            assignments = ", ".join(f"{c.strip()} = ?" for c in columns.split(","))
            conn.execute(f"UPDATE documents SET {assignments} WHERE id = ?", (*values, doc_id))
        same_fields = old_fts is not None and (
            old_fts[0], json.loads(old_fts[1]), json.loads(old_fts[2])
        ) == _fts_fields(parsed)
        retokenize = old is not None and _parser_version(old.parsed_with) < CJK_BIGRAMS_SINCE
        self._write_chunks(conn, doc_id, parsed, generation, reuse=same_fields, new=old is None,
                           retokenize=retokenize)
        self._write_doc_rows(conn, doc_id, parsed, new=old is None)
        if old is None or (compare and (renamed_from or before != link_signature(conn, doc_id))):
            self.links_changed = True
        if parsed.problems or item.relpath in self.paths_with_problems:
            self._set_problems(conn, item.relpath, "warning", parsed.problems)
        if renamed_from:
            if renamed_from in self.paths_with_problems:
                self._set_problems(conn, renamed_from, "warning", [])
            self._log(conn, "deleted", renamed_from, generation, {"renamed_to": item.relpath})
            self._log(conn, "added", item.relpath, generation, {"renamed_from": renamed_from})
            self.report.renamed += 1
        elif old is None:
            self._log(conn, "added", item.relpath, generation)
            self.report.added += 1
        else:
            self._log(conn, "changed", item.relpath, generation)
            self.report.changed += 1

    def _write_chunks(self, conn: apsw.Connection, doc_id: int, parsed: ParsedDocument, generation: int, reuse: bool,
                      new: bool, retokenize: bool = False) -> None:
        """The document's chunks: a chunk whose text is unchanged keeps its row (and its vector); ``retokenize``
        rewrites its word-index row too (the index's tokenizing changed since the document was written)."""
        reusable: dict[str, list[int]] = {}
        existing = () if new else conn.execute("SELECT id, text_hash FROM chunks WHERE doc_id = ?", (doc_id,))
        for chunk_id, text_hash in existing:
            reusable.setdefault(text_hash, []).append(chunk_id)
        if not reuse:
            stale = [i for ids in reusable.values() for i in ids]
            reusable = {}
        else:
            stale = []
        title, aliases, tags = _fts_fields(parsed)
        for ord_, chunk in enumerate(parsed.chunks):
            spans = (ord_, chunk.kind, chunk.byte_start, chunk.byte_end, chunk.line_start, chunk.line_end, generation)
            kept = reusable.get(chunk.text_hash)
            if kept:
                chunk_id = kept.pop()
                conn.execute(
                    "UPDATE chunks SET ord=?, kind=?, byte_start=?, byte_end=?, line_start=?, line_end=?, "
                    "generation=? WHERE id = ?",
                    (*spans, chunk_id),
                )
                # Same text, same symbols, unless the extraction changed: rewriting them is cheap.
                conn.execute("DELETE FROM symbols WHERE chunk_id = ?", (chunk_id,))
                store_symbols(conn, self.ws.id, chunk_id, chunk.symbols)
                if retokenize:
                    conn.execute(f"DELETE FROM {self.fts} WHERE rowid = ?", (chunk_id,))
                    self._insert_fts(conn, chunk_id, head_text(title, chunk.breadcrumb, aliases, tags), chunk.body)
                self.report.chunks_kept += 1
                continue
            chunk_id = conn.execute(
                "INSERT INTO chunks(ws_id, doc_id, ord, kind, byte_start, byte_end, line_start, line_end, "
                "generation, breadcrumb, body, text_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                (self.ws.id, doc_id, *spans, chunk.breadcrumb, chunk.body, chunk.text_hash),
            ).fetchone()[0]
            self._insert_fts(conn, chunk_id, head_text(title, chunk.breadcrumb, aliases, tags), chunk.body)
            store_symbols(conn, self.ws.id, chunk_id, chunk.symbols)
            self.report.chunks_written += 1
        stale.extend(i for ids in reusable.values() for i in ids)
        self._delete_chunks(conn, stale)

    def _insert_fts(self, conn: apsw.Connection, chunk_id: int, head: str, body: str) -> None:
        conn.execute(f"INSERT INTO {self.fts}(rowid, head, body) VALUES (?,?,?)",
                     (chunk_id, index_text(head), index_text(body)))

    def _delete_chunks(self, conn: apsw.Connection, chunk_ids: list[int]) -> None:
        for chunk_id in chunk_ids:
            conn.execute(f"DELETE FROM {self.fts} WHERE rowid = ?", (chunk_id,))
            conn.execute("DELETE FROM symbols WHERE chunk_id = ?", (chunk_id,))
            conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))
        self.report.chunks_deleted += len(chunk_ids)

    def _write_doc_rows(self, conn: apsw.Connection, doc_id: int, parsed: ParsedDocument, new: bool) -> None:
        for table in () if new else ("facets", "doc_keys", "links"):
            column = "src_doc_id" if table == "links" else "doc_id"
            conn.execute(f"DELETE FROM {table} WHERE {column} = ?", (doc_id,))
        facets = set(parsed.facets) | {("tag", tag) for tag in parsed.tags}
        conn.executemany(
            "INSERT OR IGNORE INTO facets(ws_id, field, value, doc_id) VALUES (?,?,?,?)",
            [(self.ws.id, name, value, doc_id) for name, value in facets],
        )
        conn.executemany(
            "INSERT OR IGNORE INTO doc_keys(ws_id, key, doc_id) VALUES (?,?,?)",
            [(self.ws.id, key, doc_id) for key in parsed.keys],
        )
        conn.executemany(
            "INSERT INTO links(ws_id, src_doc_id, target_key) VALUES (?,?,?)",
            [(self.ws.id, doc_id, key) for key in parsed.link_keys],
        )

    def _delete_document(self, conn: apsw.Connection, path: str, doc_id: int) -> None:
        chunk_ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))]
        self._delete_chunks(conn, chunk_ids)
        for table in ("facets", "doc_keys"):
            conn.execute(f"DELETE FROM {table} WHERE doc_id = ?", (doc_id,))
        conn.execute("DELETE FROM links WHERE src_doc_id = ?", (doc_id,))
        conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        self._log(conn, "deleted", path, self._next_generation(conn))
        self.report.deleted += 1

    def _set_problems(self, conn: apsw.Connection, path: str, kind: str, reasons: list[str]) -> None:
        conn.execute("DELETE FROM problems WHERE ws_id = ? AND path = ?", (self.ws.id, path))
        now = time.time()
        conn.executemany(
            "INSERT INTO problems(ws_id, path, kind, reason, at) VALUES (?,?,?,?,?)",
            [(self.ws.id, path, kind, reason, now) for reason in reasons],
        )
        self.report.problems.extend({"path": path, "kind": kind, "reason": r} for r in reasons)

    def _log(self, conn: apsw.Connection, op: str, path: str, generation: int, detail: dict | None = None) -> None:
        conn.execute(
            "INSERT INTO changes(ws_id, op, path, generation, at, detail) VALUES (?,?,?,?,?,?)",
            (self.ws.id, op, path, generation, time.time(), json.dumps(detail) if detail else None),
        )

    def _prune_change_log(self, conn: apsw.Connection) -> None:
        conn.execute(
            "DELETE FROM changes WHERE ws_id = ? AND at < ? AND seq < "
            "(SELECT seq FROM changes WHERE ws_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
            (self.ws.id, time.time() - CHANGE_LOG_KEEP_SECONDS, self.ws.id, CHANGE_LOG_KEEP_ROWS - 1),
        )


def file_problem_summary(conn: apsw.Connection, ws_id: int) -> list[dict]:
    rows = conn.execute("SELECT path, kind, reason FROM problems WHERE ws_id = ? ORDER BY path", (ws_id,))
    return [{"path": p, "kind": k, "reason": r} for p, k, r in rows]


def remove_workspace_rows(conn: apsw.Connection, ws_id: int) -> None:
    for table in ("chunks", "symbols", "embeddings", "model_checks", "facets", "doc_keys", "links", "problems",
                  "changes", "documents"):
        conn.execute(f"DELETE FROM {table} WHERE ws_id = ?", (ws_id,))
    conn.execute("DELETE FROM workspaces WHERE id = ?", (ws_id,))
